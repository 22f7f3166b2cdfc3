package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of utime/stime in /proc/PID/stat: 100 on every Linux ABI Go
// supports.
const clockTick = 10 * time.Millisecond

// cpuTime returns the user + system CPU the process has used, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis are
	// space-separated, utime and stime being fields 14 and 15 of the whole line.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * clockTick, nil
}

// memInfo is the resident memory of a process, in bytes.
type memInfo struct{ rss, anon int64 }

func (m memInfo) String() string { return fmt.Sprintf("%s / %s", mib(m.rss), mib(m.anon)) }

// readMem reads VmRSS and RssAnon from /proc/PID/status.
func readMem(pid int) (memInfo, error) {
	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memInfo{}, err
	}
	defer fh.Close()
	var m memInfo
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.rss
		case "RssAnon":
			dst = &m.anon
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memInfo{}, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		*dst = kb << 10
	}
	return m, sc.Err()
}

// dirBytes sums the sizes of the regular files under dir (the SQLite file, its WAL and shm).
// dirBytes sums the sizes of the regular files under dir: the database files, and apart from
// them SQLite's write-ahead logs and their shared-memory indexes (-wal, -shm), which hold
// commits not yet copied back and are bounded by the store's checkpointer rather than by the
// number of turns (emptied after an idle spell).
func dirBytes(dir string) (files, logs int64) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				if strings.HasSuffix(path, "-wal") || strings.HasSuffix(path, "-shm") {
					logs += fi.Size()
				} else {
					files += fi.Size()
				}
			}
		}
		return nil
	})
	return files, logs
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// counters are a process's cumulative kernel counters that make per-turn costs comparable
// across runs on a noisy machine, unlike CPU time: its read and write system calls (syscr +
// syscw of /proc/PID/io: socket, file and WAL I/O alike) and its threads' context switches
// (voluntary and not, summed over /proc/PID/task: a goroutine handoff that wakes a parked
// thread is one or two of them).
type counters struct{ syscalls, switches int64 }

// readCounters reads counters of pid. Threads that exited are not counted; Go's rarely do.
func readCounters(pid int) (counters, error) {
	var c counters
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return c, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "syscr" || k == "syscw" {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			c.syscalls += n
		}
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return c, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches" {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				c.switches += n
			}
		}
	}
	return c, nil
}

// perTurn formats a counter's growth over n turns.
func perTurn(from, to int64, n int) string { return fmt.Sprintf("%.1f", float64(to-from)/float64(n)) }
