package metrics

import (
	"bytes"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
)

// goFamilies emits the Go runtime's figures under the names of the Prometheus Go collector
// (go_goroutines, go_memstats_*_bytes, …), so dashboards and bench/realpath keep reading them.
// runtime.ReadMemStats stops the world for a few microseconds, once per scrape.
func goFamilies(emit func(Family)) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gauge := func(name, help string, v float64) {
		emit(Family{Name: name, Help: help, Kind: "gauge", Samples: []Sample{{Value: v}}})
	}
	counter := func(name, help string, v float64) {
		emit(Family{Name: name, Help: help, Kind: "counter", Samples: []Sample{{Value: v}}})
	}
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	gauge("go_threads", "Number of OS threads created.", float64(pprof.Lookup("threadcreate").Count()))
	emit(Family{Name: "go_info", Help: "Information about the Go environment.", Kind: "gauge",
		Samples: []Sample{{LabelNames: []string{"version"}, LabelValues: []string{runtime.Version()}, Value: 1}}})
	emit(Family{Name: "go_gc_duration_seconds", Help: "Total pause time of the garbage collector's stop-the-world phases, and their count.", Kind: "summary",
		Samples: []Sample{{Count: uint64(ms.NumGC), Sum: float64(ms.PauseTotalNs) / 1e9}}})
	for _, g := range []struct {
		name, help string
		v          uint64
	}{
		{"alloc_bytes", "Bytes of allocated heap objects.", ms.Alloc},
		{"sys_bytes", "Bytes of memory obtained from the OS.", ms.Sys},
		{"heap_alloc_bytes", "Bytes of allocated heap objects.", ms.HeapAlloc},
		{"heap_sys_bytes", "Bytes of heap memory obtained from the OS.", ms.HeapSys},
		{"heap_idle_bytes", "Bytes in idle (unused) heap spans.", ms.HeapIdle},
		{"heap_inuse_bytes", "Bytes in in-use heap spans.", ms.HeapInuse},
		{"heap_released_bytes", "Bytes of idle heap spans returned to the OS.", ms.HeapReleased},
		{"heap_objects", "Number of allocated heap objects.", ms.HeapObjects},
		{"stack_inuse_bytes", "Bytes in stack spans.", ms.StackInuse},
		{"stack_sys_bytes", "Bytes of stack memory obtained from the OS.", ms.StackSys},
		{"mspan_inuse_bytes", "Bytes of allocated mspan structures.", ms.MSpanInuse},
		{"mspan_sys_bytes", "Bytes of memory obtained from the OS for mspan structures.", ms.MSpanSys},
		{"mcache_inuse_bytes", "Bytes of allocated mcache structures.", ms.MCacheInuse},
		{"mcache_sys_bytes", "Bytes of memory obtained from the OS for mcache structures.", ms.MCacheSys},
		{"buck_hash_sys_bytes", "Bytes of memory in profiling bucket hash tables.", ms.BuckHashSys},
		{"gc_sys_bytes", "Bytes of memory in garbage collection metadata.", ms.GCSys},
		{"other_sys_bytes", "Bytes of memory in miscellaneous off-heap runtime allocations.", ms.OtherSys},
		{"next_gc_bytes", "Heap size target of the next garbage collection.", ms.NextGC},
	} {
		gauge("go_memstats_"+g.name, g.help, float64(g.v))
	}
	gauge("go_memstats_last_gc_time_seconds", "Time of the last garbage collection since 1970.", float64(ms.LastGC)/1e9)
	counter("go_memstats_alloc_bytes_total", "Total bytes allocated for heap objects.", float64(ms.TotalAlloc))
	counter("go_memstats_mallocs_total", "Total heap objects allocated.", float64(ms.Mallocs))
	counter("go_memstats_frees_total", "Total heap objects freed.", float64(ms.Frees))
}

// processFamilies emits the process collector's figures (process_*) from /proc; where there is
// no /proc (not Linux) they are left out.
func processFamilies(emit func(Family)) {
	gauge := func(name, help string, v float64) {
		emit(Family{Name: name, Help: help, Kind: "gauge", Samples: []Sample{{Value: v}}})
	}
	if st, ok := readProcStat(); ok {
		emit(Family{Name: "process_cpu_seconds_total", Help: "Total user and system CPU time spent in seconds.", Kind: "counter",
			Samples: []Sample{{Value: st.cpuSeconds}}})
		gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", st.vsize)
		gauge("process_resident_memory_bytes", "Resident memory size in bytes.", st.rss)
		if st.start > 0 {
			gauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.", st.start)
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		gauge("process_open_fds", "Number of open file descriptors.", float64(len(fds)))
	}
	if n, ok := maxFDs(); ok {
		gauge("process_max_fds", "Maximum number of open file descriptors.", n)
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux ABI Go supports.
const clockTicks = 100

type procStat struct{ cpuSeconds, vsize, rss, start float64 }

func readProcStat() (procStat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, false
	}
	// Fields after the command's closing parenthesis (the command may hold spaces): utime and
	// stime are fields 14 and 15 of the line, starttime 22, vsize 23, rss (pages) 24.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return procStat{}, false
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	st := procStat{
		cpuSeconds: (num(f[11]) + num(f[12])) / clockTicks,
		vsize:      num(f[20]),
		rss:        num(f[21]) * float64(os.Getpagesize()),
	}
	if boot, ok := bootTime(); ok {
		st.start = boot + num(f[19])/clockTicks
	}
	return st, true
}

// bootTime is /proc/stat's btime: the boot time in seconds since the epoch.
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n, err == nil
		}
	}
	return 0, false
}

// maxFDs is the soft limit of open files from /proc/self/limits.
func maxFDs() (float64, bool) {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.ParseFloat(f[0], 64)
			return n, err == nil
		}
	}
	return 0, false
}
