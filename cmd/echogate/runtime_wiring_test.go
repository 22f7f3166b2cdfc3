package main

import (
	"errors"
	"log/slog"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]struct {
		limit int64
		auto  bool
		bad   bool
	}{
		"":         {auto: true},
		"auto":     {auto: true},
		"off":      {},
		"512MiB":   {limit: 512 << 20},
		"1GiB":     {limit: 1 << 30},
		"1.5GiB":   {limit: 3 << 29},
		"300MB":    {limit: 300e6},
		"300 mb":   {limit: 300e6},
		"67108864": {limit: 64 << 20},
		"1MiB":     {bad: true}, // too small to be useful
		"lots":     {bad: true},
		"12XB":     {bad: true},
		"MiB":      {bad: true},
	} {
		limit, auto, err := parseMemoryLimit(in)
		if (err != nil) != want.bad || limit != want.limit || auto != want.auto {
			t.Errorf("parseMemoryLimit(%q) = %d, %v, %v; want %d, %v, error %v", in, limit, auto, err, want.limit, want.auto, want.bad)
		}
	}
}

func TestMemoryLimitSources(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, errors.New("no such file")
		}
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	v2 := map[string]string{"/sys/fs/cgroup/memory.max": "1073741824\n"}
	for name, tt := range map[string]struct {
		conf  string
		env   string
		files map[string]string
		want  int64
		from  string
	}{
		"GOMEMLIMIT wins":           {conf: "256MiB", env: "100MiB", files: v2, want: 0, from: "GOMEMLIMIT"},
		"explicit size":             {conf: "256MiB", files: v2, want: 256 << 20, from: "runtime.memory_limit"},
		"off":                       {conf: "off", files: v2, want: 0, from: "off"},
		"auto under cgroup v2":      {files: v2, want: 966367641, from: "90% of the cgroup memory limit"},
		"auto, cgroup v2 unlimited": {files: map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, from: "auto: no container memory limit"},
		"auto under cgroup v1":      {files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912"}, want: 483183820, from: "90% of the cgroup memory limit"},
		"auto, cgroup v1 unlimited": {files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712"}, from: "auto: no container memory limit"},
		"auto, no cgroup":           {from: "auto: no container memory limit"},
	} {
		got, from := memoryLimit(RuntimeConf{MemoryLimit: tt.conf}, env(tt.env), files(tt.files))
		if got != tt.want || from != tt.from {
			t.Errorf("%s: memoryLimit = %d (%s), want %d (%s)", name, got, from, tt.want, tt.from)
		}
	}
}

// serve paces the collector (internal/gcpace) unless GOGC is set, whatever its value.
func TestGCPaceWiring(t *testing.T) {
	for gogc, want := range map[string]bool{"": true, "100": false, "50": false, "off": false} {
		c := &core{log: slog.New(slog.DiscardHandler)}
		c.addGCPace(func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		})
		if _, got := c.workers["gcpace"]; got != want {
			t.Errorf("GOGC=%q: gcpace worker registered %v, want %v", gogc, got, want)
		}
	}
}
