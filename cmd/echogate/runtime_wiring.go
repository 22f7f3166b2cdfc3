package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/echogate/echogate/internal/gcpace"
)

// RuntimeConf tunes the Go runtime of serve.
type RuntimeConf struct {
	// MemoryLimit is the Go runtime's soft memory limit (debug.SetMemoryLimit): near it the
	// garbage collector runs more often instead of letting the heap grow to twice the live
	// data. "auto" (default): 90% of the container's memory limit (cgroup memory.max) when
	// there is one, else none. "off": none. Or a size: 512MiB, 1GiB, 300MB, bytes. The
	// GOMEMLIMIT environment variable, when set, wins over this key.
	MemoryLimit string `yaml:"memory_limit"`
}

// memoryLimitShare is the part of a container's memory limit that "auto" gives the Go runtime:
// the rest is for SQLite's heap, the binary's pages and what the kernel charges the container.
const memoryLimitShare = 0.9

func (c RuntimeConf) validate() error {
	if _, _, err := parseMemoryLimit(c.MemoryLimit); err != nil {
		return badKey("runtime.memory_limit", "%v (ECHOGATE_RUNTIME_MEMORY_LIMIT)", err)
	}
	return nil
}

// parseMemoryLimit reads runtime.memory_limit: auto ("" or "auto"), off (limit 0) or a size.
func parseMemoryLimit(s string) (limit int64, auto bool, err error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "auto":
		return 0, true, nil
	case "off", "none":
		return 0, false, nil
	}
	num, unit := s, ""
	if i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	mult, ok := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}[strings.ToLower(unit)]
	v, perr := strconv.ParseFloat(num, 64)
	if !ok || perr != nil || num == "" {
		return 0, false, fmt.Errorf("%q is not a size: write auto, off, or a size like 512MiB, 1GiB or 300MB", s)
	}
	b := v * mult
	if b < 16<<20 || b > math.MaxInt64/2 {
		return 0, false, fmt.Errorf("%q is out of range: a memory limit below 16 MiB would keep the collector running all the time", s)
	}
	return int64(b), false, nil
}

// cgroupMemoryMax is the memory limit of the process's cgroup (v2, else v1), or 0 when there
// is none or it cannot be read.
func cgroupMemoryMax(readFile func(string) ([]byte, error)) int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := readFile(path)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 || v >= 1<<60 { // "max", or v1's "no limit" (a huge number)
			return 0
		}
		return v
	}
	return 0
}

// memoryLimit decides the soft memory limit to set and says where it came from; 0 means none
// is set. getenv and readFile are os.Getenv and os.ReadFile outside tests.
func memoryLimit(conf RuntimeConf, getenv func(string) string, readFile func(string) ([]byte, error)) (int64, string) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT"
	}
	limit, auto, err := parseMemoryLimit(conf.MemoryLimit)
	switch {
	case err != nil: // validated with the config
		return 0, "invalid"
	case !auto:
		if limit == 0 {
			return 0, "off"
		}
		return limit, "runtime.memory_limit"
	}
	if max := cgroupMemoryMax(readFile); max > 0 {
		return int64(float64(max) * memoryLimitShare), "90% of the cgroup memory limit"
	}
	return 0, "auto: no container memory limit"
}

// applyRuntime sets serve's soft memory limit (GOMEMLIMIT, when set, was applied by the runtime).
func applyRuntime(conf RuntimeConf, log *slog.Logger) {
	limit, from := memoryLimit(conf, os.Getenv, os.ReadFile)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	log.Debug("go runtime memory limit", "limit_bytes", limit, "from", from)
}

// addGCPace registers serve's collector pacer (internal/gcpace): the heap's headroom stops
// growing with the live heap past 16 MiB and is half of it from 32 MiB on, so a loaded gateway
// does not keep as much garbage again as it has live data. GOGC in the environment, whatever
// its value, is the operator's choice and turns the pacer off.
func (c *core) addGCPace(getenv func(string) string) {
	if getenv("GOGC") != "" {
		c.log.Debug("go runtime gc pacing off", "from", "GOGC")
		return
	}
	if c.workers == nil {
		c.workers = map[string]func(context.Context) error{}
	}
	c.workers["gcpace"] = func(ctx context.Context) error { return gcpace.Run(ctx, gcpace.Config{}) }
}
