package extract

import (
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
)

// limitSelf bounds this (child) process: the address space to what it holds now plus mem, CPU
// time to d, and the Go heap's soft limit to mem. Counting from the current size keeps the limit
// right for binaries that reserve much address space at start (the race detector's shadow).
func limitSelf(mem int64, d time.Duration) {
	debug.SetMemoryLimit(mem)
	if cur := vmSize(); cur > 0 {
		as := uint64(cur + mem)
		_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as})
	}
	secs := uint64(d/time.Second) + 1
	_ = syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: secs + 1})
}

// selfExe is the running binary: /proc/self/exe stays valid when the file was replaced or
// removed since the start (an upgrade in place), where the path os.Executable names may not.
func selfExe() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// vmSize is this process's virtual memory size in bytes, from /proc/self/status (0 if unknown).
func vmSize() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmSize:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
