package main

import (
	"bufio"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

var gatewayEnv = flag.String("gateway-env", "", "comma list of KEY=VALUE added to the measured gateway's environment, e.g. GOMEMLIMIT=128MiB")

// extraGatewayEnv is -gateway-env as a list.
func extraGatewayEnv() []string {
	var out []string
	for _, kv := range strings.Split(*gatewayEnv, ",") {
		if kv = strings.TrimSpace(kv); strings.Contains(kv, "=") {
			out = append(out, kv)
		}
	}
	return out
}

var freshSessions = flag.Bool("fresh-sessions", false, "each throughput scenario uses new sessions (default: a repeated session count continues the same conversations)")

// memParts attributes a gateway's resident memory: what the Go runtime says it holds (from its
// /metrics) against what the kernel says is resident (/proc/PID/status). Anonymous memory the
// Go heap and stacks do not hold is the Go runtime's metadata plus the C-style heap of the
// embedded SQLite (modernc.org/libc's allocator: page caches, prepared statements); the
// file-backed rest is mostly the binary's pages.
type memParts struct {
	heapLive, heapInuse, heapFree, stacks, runtime int64 // Go runtime, bytes
	goroutines                                     int64
	mem                                            memInfo
}

// readMemParts reads the gateway's /metrics and /proc status at about the same moment.
func readMemParts(base string, pid int) (memParts, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return memParts{}, err
	}
	defer resp.Body.Close()
	v := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(name, "go_") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			v[name] = f
		}
	}
	if err := sc.Err(); err != nil {
		return memParts{}, err
	}
	m, err := readMem(pid)
	if err != nil {
		return memParts{}, err
	}
	g := func(k string) int64 { return int64(v["go_memstats_"+k+"_bytes"]) }
	return memParts{
		heapLive: g("heap_alloc"), heapInuse: g("heap_inuse"),
		heapFree: g("heap_idle") - g("heap_released"), stacks: g("stack_inuse"),
		runtime:    g("sys") - g("heap_sys") - g("stack_sys"),
		goroutines: int64(v["go_goroutines"]), mem: m,
	}, nil
}

// other is the anonymous memory outside the Go heap and stacks: SQLite's heap and the Go
// runtime's own metadata (p.runtime is what the runtime mapped for it, not all resident).
func (p memParts) other() int64 {
	return p.mem.anon - p.heapInuse - p.heapFree - p.stacks
}

func (p memParts) String() string {
	return fmt.Sprintf("Go heap in use %s (live+garbage %s), free not returned %s, stacks %s (%d goroutines), other anon %s (SQLite's heap; Go runtime metadata ≤ %s); file-backed %s",
		mib(p.heapInuse), mib(p.heapLive), mib(p.heapFree), mib(p.stacks), p.goroutines, mib(p.other()), mib(p.runtime), mib(p.mem.rss-p.mem.anon))
}
