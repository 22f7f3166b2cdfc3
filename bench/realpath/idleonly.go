package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// idleOnly stops the benchmark after exec → ready and the idle figures: a quick way to compare
// the start-up footprint of two binaries (-bin) in alternating runs.
var idleOnly = flag.Bool("idle-only", false, "measure exec → ready and idle memory only, then stop (with the binary's resident mappings)")

// binaryMappings lists the resident kilobytes of each mapping of the gateway's executable, from
// /proc/PID/smaps: text (r-xp), read-only data and the pc tables (r--p), writable data (rw-p).
func binaryMappings(pid int) (string, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	var parts []string
	mine := false
	perm := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			mine, perm = len(fs) >= 6 && fs[5] == exe, fs[1]
		case mine && len(fs) >= 2 && fs[0] == "Rss:":
			kb, _ := strconv.Atoi(fs[1])
			parts = append(parts, fmt.Sprintf("%s %.1f MiB", perm, float64(kb)/1024))
		}
	}
	return "binary's resident mappings: " + strings.Join(parts, ", "), sc.Err()
}
