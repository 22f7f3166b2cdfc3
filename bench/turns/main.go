// Command turns measures the gateway's own cost per turn and its throughput, with the embedded
// SQLite store on. It reports figures; it never fails on them.
//
//	go run ./bench/turns                  # all scenarios
//	go run ./bench/turns -overhead=5000   # more turns for the overhead scenario
//
// Overhead: one session at a time, a model that answers at once and calls one tool (current_time)
// first, so each turn is two model calls, one tool call, and every store write of a real turn.
// Throughput: S sessions each sending its next message when the previous one is answered, with a
// model that answers in 200 ms without tools; ideal is S / 0.2 s turns per second. The sessions
// join over one model latency, and the rate is counted over -duration after a 1 s warm-up. Each
// scenario also prints where a turn's time went (stages), the process CPU, the Go scheduler's
// latency and the SQLite writer's load; -memstore runs the same on the in-memory test store
// (the gateway without storage), -storecalls times every store call, -cpuprofile and -trace
// record the largest scenario.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/sqlite"
)

var (
	storeCalls   = flag.Bool("storecalls", false, "time every store call of the pipeline and print p50/p99 per method (adds a lock per call)")
	memStore     = flag.Bool("memstore", false, "run the throughput scenarios on the in-memory test store: the gateway's own ceiling, without storage")
	cpuprofile   = flag.String("cpuprofile", "", "write a CPU profile of the largest throughput scenario's measurement window")
	traceFile    = flag.String("trace", "", "write an execution trace of one second of the largest throughput scenario")
	sessionsFlag = flag.String("sessions", "1,100,1000", "concurrent sessions of the throughput scenarios")
	pgSessions   = flag.String("pg-sessions", "1,100", "concurrent sessions of the PostgreSQL throughput scenarios (DATABASE_URL set); each running turn holds a session-lock connection")
	pgLockConns  = flag.Int("pg-lock-conns", postgres.DefaultMaxLockConns, "connections the PostgreSQL store's session locks are multiplexed over; default: what echogate serve runs with")
)

func main() {
	overheadTurns := flag.Int("overhead", 2000, "turns in the overhead scenario")
	duration := flag.Duration("duration", 8*time.Second, "measurement window of each throughput scenario (after a 1 s warm-up)")
	latency := flag.Duration("latency", 200*time.Millisecond, "model latency in the throughput scenarios")
	flag.Parse()

	fmt.Printf("echogate turn benchmark — %s, %d CPUs, GOMAXPROCS %d\n\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if err := overhead(*overheadTurns); err != nil {
		fmt.Fprintln(os.Stderr, "overhead:", err)
		os.Exit(1)
	}
	store := "store on (SQLite, WAL)"
	if *memStore {
		store = "in-memory test store"
	}
	fmt.Printf("\nthroughput: model answers in %s, no tools, %s; sessions join over one model latency, rate over %s after 1 s\n", *latency, store, *duration)
	fmt.Printf("%10s %12s %12s %10s %12s %12s\n", "sessions", "turns", "turns/s", "ideal", "% of ideal", "p99 latency")
	for _, s := range splitInts(*sessionsFlag) {
		if err := throughput(s, *duration, *latency); err != nil {
			fmt.Fprintln(os.Stderr, "throughput:", err)
			os.Exit(1)
		}
	}
	if pgURL = os.Getenv("DATABASE_URL"); pgURL != "" && !*memStore {
		fmt.Printf("\nthroughput: model answers in %s, no tools, store on PostgreSQL (DATABASE_URL, a schema of its own; replicas mode: the claim takes the session lock, the record rides the context reads, the end releases the lock); session locks on %d connections\n",
			*latency, *pgLockConns)
		fmt.Printf("%10s %12s %12s %10s %12s %12s\n", "sessions", "turns", "turns/s", "ideal", "% of ideal", "p99 latency")
		for _, s := range splitInts(*pgSessions) {
			if err := throughput(s, *duration, *latency); err != nil {
				fmt.Fprintln(os.Stderr, "throughput (postgres):", err)
				os.Exit(1)
			}
		}
	}
}

type hist struct {
	counts  []uint64
	buckets []float64
}

func schedLat() hist {
	sm := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(sm)
	h := sm[0].Value.Float64Histogram()
	return hist{append([]uint64(nil), h.Counts...), h.Buckets}
}

func (h hist) sub(o hist) string {
	var total uint64
	c := make([]uint64, len(h.counts))
	for i := range c {
		c[i] = h.counts[i] - o.counts[i]
		total += c[i]
	}
	q := func(p float64) string {
		var acc uint64
		for i, n := range c {
			acc += n
			if float64(acc) >= p*float64(total) {
				return time.Duration(h.buckets[i+1] * 1e9).String()
			}
		}
		return "?"
	}
	return fmt.Sprintf("n=%d p50<%s p90<%s p99<%s p99.9<%s", total, q(0.5), q(0.9), q(0.99), q(0.999))
}

func sysTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Stime.Nano())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func overhead(n int) error {
	r, err := newRig(instantModel{tools: true}, 32, false)
	if err != nil {
		return err
	}
	defer r.close()
	for i := 0; i < 200; i++ { // warm up: caches, prepared statements, history
		if err := r.turn(fmt.Sprintf("s%d", i%100)); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, 0, n)
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := r.turn(fmt.Sprintf("s%d", i%100)); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("overhead: %d turns, each 2 model calls (instant) + 1 tool call, store on (SQLite, WAL)\n", n)
	fmt.Printf("  latency p50 %s  p90 %s  p99 %s  max %s\n", pct(lat, 50), pct(lat, 90), pct(lat, 99), lat[len(lat)-1])
	fmt.Printf("  CPU per turn %s (process user+system over the run)\n", (cpu / time.Duration(n)).Round(time.Microsecond))
	fmt.Printf("  allocations per turn %d, bytes per turn %d\n", (ms1.Mallocs-ms0.Mallocs)/uint64(n), (ms1.TotalAlloc-ms0.TotalAlloc)/uint64(n))
	fmt.Printf("  sequential rate %.0f turns/s\n", float64(n)/wall.Seconds())
	return nil
}

func throughput(sessions int, d, latency time.Duration) error {
	r, err := newRig(instantModel{delay: latency}, 32, *memStore)
	if err != nil {
		return err
	}
	defer r.close()
	// Sessions join over one model latency, as independent conversations do, and the rate is
	// measured after a warm-up of one second, over d.
	start := time.Now()
	from, stop := start.Add(time.Second), start.Add(time.Second+d)
	l := startSessions(r, sessions, latency, from, stop)
	time.Sleep(time.Until(from))
	w := measureWindow(r, sessions, stop)
	lat, err := l.wait()
	if err != nil {
		return err
	}
	printThroughput(r, sessions, l.turns.Load(), d, latency, lat, w)
	return nil
}

// sessionLoad is the throughput scenario's sessions, each sending its next message when the
// previous one is answered; it counts the turns answered inside the measurement window.
type sessionLoad struct {
	wg    sync.WaitGroup
	errc  chan error
	turns atomic.Int64
	mu    sync.Mutex
	lat   []time.Duration
}

// startSessions starts sessions goroutines on r, joining over one model latency, that run turns
// until stop and count those answered between from and stop.
func startSessions(r *rig, sessions int, latency time.Duration, from, stop time.Time) *sessionLoad {
	l := &sessionLoad{errc: make(chan error, sessions)}
	for s := 0; s < sessions; s++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			time.Sleep(time.Duration(s) * latency / time.Duration(sessions))
			var mine []time.Duration
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := r.turn(fmt.Sprintf("t%d", s)); err != nil {
					l.errc <- err
					return
				}
				if now := time.Now(); now.After(from) && now.Before(stop) {
					mine = append(mine, now.Sub(t0))
					l.turns.Add(1)
				}
			}
			l.mu.Lock()
			l.lat = append(l.lat, mine...)
			l.mu.Unlock()
		}()
	}
	return l
}

// wait waits for every session to end and returns the window's latencies, sorted, or the first
// session's error.
func (l *sessionLoad) wait() ([]time.Duration, error) {
	l.wg.Wait()
	select {
	case err := <-l.errc:
		return nil, err
	default:
	}
	sort.Slice(l.lat, func(i, j int) bool { return l.lat[i] < l.lat[j] })
	return l.lat, nil
}

// window is what the throughput scenarios measure beside the rate, over the measurement
// window only.
type window struct {
	cpu, sys time.Duration // process CPU (user+system) and its system part
	wall     time.Duration
	sched    string // goroutine scheduling latency (runnable → running), rendered
	// writes0 and writes are the SQLite writer's counters at the window's start and end (zero
	// when the pipeline runs on another store).
	writes0, writes sqlite.WriteStats
}

// measureWindow measures from now until stop, recording a CPU profile or a trace of the largest
// scenario when asked.
func measureWindow(r *rig, sessions int, stop time.Time) window {
	var ws0 sqlite.WriteStats
	if !r.mem {
		ws0 = r.store.WriteStats()
	}
	sched0, cpu0, sys0, wall0 := schedLat(), cpuTime(), sysTime(), time.Now()
	if *cpuprofile != "" && sessions == profileSessions() {
		if f, err := os.Create(*cpuprofile); err == nil && pprof.StartCPUProfile(f) == nil {
			time.Sleep(time.Until(stop))
			pprof.StopCPUProfile()
			f.Close()
		}
	}
	if *traceFile != "" && sessions == profileSessions() {
		if f, err := os.Create(*traceFile); err == nil && trace.Start(f) == nil {
			time.Sleep(min(time.Second, time.Until(stop)))
			trace.Stop()
			f.Close()
		}
	}
	time.Sleep(time.Until(stop))
	w := window{cpu: cpuTime() - cpu0, sys: sysTime() - sys0, wall: time.Since(wall0), sched: schedLat().sub(sched0), writes0: ws0}
	if !r.mem {
		w.writes = r.store.WriteStats()
	}
	return w
}

// printThroughput prints one scenario's row and its stage, CPU, writer and store-call figures.
func printThroughput(r *rig, sessions int, turns int64, d, latency time.Duration, lat []time.Duration, w window) {
	rate := float64(turns) / d.Seconds()
	ideal := float64(sessions) / latency.Seconds()
	fmt.Printf("%10d %12d %12.0f %10.0f %11.1f%% %12s\n", sessions, turns, rate, ideal, 100*rate/ideal, pct(lat, 99))
	fmt.Printf("%10s stages:%s\n", "", r.rep.stageReport())
	fmt.Printf("%10s CPU %.0f%% of one core (system %.0f%%), %s per turn; scheduling latency %s\n", "",
		100*w.cpu.Seconds()/w.wall.Seconds(), 100*w.sys.Seconds()/w.wall.Seconds(),
		(w.cpu / time.Duration(max(turns, 1))).Round(time.Microsecond), w.sched)
	if !r.mem {
		ws, ws0 := w.writes, w.writes0
		n, c, b := ws.Batches-ws0.Batches, ws.Calls-ws0.Calls, ws.Busy-ws0.Busy
		fmt.Printf("%10s SQLite writer busy %.0f%%, %d group commits of %.1f calls (%s each)\n", "",
			100*b.Seconds()/w.wall.Seconds(), n, float64(c)/float64(max(n, 1)), (b / time.Duration(max(n, 1))).Round(time.Microsecond))
	}
	if r.ts != nil {
		fmt.Print(r.ts.report())
	}
}

// profileSessions is the scenario -cpuprofile and -trace record: the largest.
func profileSessions() int {
	most := 0
	for _, s := range splitInts(*sessionsFlag) {
		most = max(most, s)
	}
	return most
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i].Round(10 * time.Microsecond)
}

func splitInts(s string) []int {
	var out []int
	n, in := 0, false
	for _, c := range s + "," {
		if c >= '0' && c <= '9' {
			n, in = n*10+int(c-'0'), true
			continue
		}
		if in {
			out = append(out, n)
		}
		n, in = 0, false
	}
	return out
}
