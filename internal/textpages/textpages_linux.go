package textpages

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"syscall"
)

// Release unmaps the resident pages of the executable's read-only mappings (see the package
// comment). It never blocks on anything but reading /proc/self/smaps, is safe to call from any
// goroutine at any time (code running in a released page faults it back), and returns an error
// only when smaps cannot be read or parsed or madvise fails; what it released before a failing
// madvise stays released.
func Release() (Stats, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return Stats{}, fmt.Errorf("textpages: %w", err)
	}
	maps, err := parseSmaps(f)
	f.Close()
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	for _, m := range releasable(maps, uint64(reflect.ValueOf(Release).Pointer())) {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), syscall.MADV_DONTNEED); e != 0 {
			return st, fmt.Errorf("textpages: madvise %#x-%#x %s: %w", m.start, m.end, m.path, e)
		}
		st.Mappings++
		st.Bytes += m.rss
	}
	return st, nil
}

// mapping is one entry of /proc/self/smaps.
type mapping struct {
	start, end uint64
	perms      string
	path       string
	rss, anon  int64 // bytes
}

// releasable returns the mappings of the file that holds the code at pc which are read-only,
// hold no private copy of a page and have pages resident.
func releasable(maps []mapping, pc uint64) []mapping {
	path := ""
	for _, m := range maps {
		if m.start <= pc && pc < m.end {
			path = m.path
			break
		}
	}
	if path == "" || path[0] != '/' {
		return nil
	}
	var out []mapping
	for _, m := range maps {
		if m.path != path || len(m.perms) < 4 || m.perms[1] == 'w' || m.perms[3] != 'p' || m.anon != 0 || m.rss == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// parseSmaps reads the format of proc_pid_smaps(5): a header line per mapping
// ("start-end perms offset dev inode [path]") followed by "Key: value [kB]" lines.
func parseSmaps(r io.Reader) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		key, rest, isField := fieldOf(b)
		if isField {
			if len(out) == 0 {
				return nil, fmt.Errorf("textpages: smaps line %d: %q before any mapping", line, b)
			}
			m := &out[len(out)-1]
			switch key {
			case "Rss":
				m.rss = kB(rest)
			case "Anonymous":
				m.anon = kB(rest)
			}
			continue
		}
		m, err := parseHeader(b)
		if err != nil {
			return nil, fmt.Errorf("textpages: smaps line %d: %w", line, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("textpages: smaps: %w", err)
	}
	return out, nil
}

// fieldOf splits "Key:   123 kB" into Key and "123 kB"; a header line's first word is an
// address range, never ending in ':'.
func fieldOf(b []byte) (key string, rest []byte, ok bool) {
	i := bytes.IndexByte(b, ':')
	if i <= 0 || bytes.IndexByte(b[:i], ' ') >= 0 || bytes.IndexByte(b[:i], '-') >= 0 {
		return "", nil, false
	}
	return string(b[:i]), bytes.TrimSpace(b[i+1:]), true
}

// kB parses "123 kB" into bytes; anything else is 0.
func kB(v []byte) int64 {
	num, _, _ := bytes.Cut(v, []byte(" "))
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return 0
	}
	return n << 10
}

func parseHeader(b []byte) (mapping, error) {
	f := bytes.Fields(b)
	if len(f) < 5 {
		return mapping{}, fmt.Errorf("%q is not a mapping header", b)
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return mapping{}, fmt.Errorf("%q: address range %q has no '-'", b, f[0])
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end < start {
		return mapping{}, fmt.Errorf("%q: bad address range %q", b, f[0])
	}
	m := mapping{start: start, end: end, perms: string(f[1])}
	if len(f) >= 6 {
		m.path = string(afterFields(b, 5)) // the path may hold spaces
	}
	return m, nil
}

// afterFields returns b after its first n space-separated fields and the spaces that follow.
func afterFields(b []byte, n int) []byte {
	for range n {
		b = bytes.TrimLeft(b, " \t")
		i := bytes.IndexAny(b, " \t")
		if i < 0 {
			return nil
		}
		b = b[i:]
	}
	return bytes.TrimLeft(b, " \t")
}
