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
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/sqlite"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
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
		fmt.Printf("\nthroughput: model answers in %s, no tools, store on PostgreSQL (DATABASE_URL, a schema of its own; replicas mode: session locks, turn record and question written before the model call); session locks on %d connections\n",
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

// instantModel answers at once: the first call of a turn asks for current_time, the second
// answers. With delay set it sleeps first and never calls tools.
type instantModel struct {
	delay time.Duration
	tools bool
}

func (m instantModel) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	if m.delay > 0 {
		t := time.NewTimer(m.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return agent.Response{}, ctx.Err()
		case <-t.C:
		}
	}
	u := echogate.Usage{Kind: echogate.UsageModel, Model: req.Model, InputTokens: 120, OutputTokens: 12}
	last := req.Messages[len(req.Messages)-1]
	if m.tools && last.Role == echogate.RoleUser {
		return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant,
			ToolCalls: []echogate.ToolCall{{ID: "call_1", Name: "current_time", Arguments: `{}`}}}, Usage: u, FinishReason: "tool_calls", Model: req.Model}, nil
	}
	for _, f := range []string{"It is ", "about ", "noon."} {
		if err := onDelta(agent.Delta{Text: f}); err != nil {
			return agent.Response{}, err
		}
	}
	return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant, Content: "It is about noon."}, Usage: u, FinishReason: "stop", Model: req.Model}, nil
}

// replier signals finished turns per event id and records when each stage was reached. It
// keeps its bookkeeping off any shared lock on the hot path (a sync.Map of waiters, atomic
// marks), so the harness does not become the bottleneck it measures.
type replier struct {
	waiters sync.Map // event id -> *waiter
	mu      sync.Mutex
	stages  [3][]time.Duration // submit→start, start→first token, last token→done
}

// waiter is one submitted event: its completion channel and stage marks (Unix nanoseconds).
type waiter struct {
	done               chan struct{}
	submit             time.Time
	start, first, last atomic.Int64
}

func (r *replier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	return echogate.MessageRef{Platform: "web", Channel: out.Conversation.Channel, ID: "m"}, nil
}

func (r *replier) ObserveTurn(ev echogate.TurnEvent) {
	v, ok := r.waiters.Load(ev.EventID)
	if !ok {
		return
	}
	w := v.(*waiter)
	now := time.Now().UnixNano()
	switch ev.Type {
	case echogate.TurnStarted:
		w.start.Store(now)
	case echogate.TurnDelta:
		w.first.CompareAndSwap(0, now)
		w.last.Store(now)
	case echogate.TurnDone:
		r.waiters.Delete(ev.EventID)
		if start, first := w.start.Load(), w.first.Load(); start != 0 && first != 0 {
			r.mu.Lock()
			r.stages[0] = append(r.stages[0], time.Duration(start-w.submit.UnixNano()))
			r.stages[1] = append(r.stages[1], time.Duration(first-start))
			r.stages[2] = append(r.stages[2], time.Duration(now-w.last.Load()))
			r.mu.Unlock()
		}
		close(w.done)
	}
}

// stageReport renders the p50/p99 of each stage.
func (r *replier) stageReport() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := ""
	for i, name := range []string{"submit→start", "start→first token", "last token→done"} {
		st := append([]time.Duration(nil), r.stages[i]...)
		sort.Slice(st, func(a, b int) bool { return st[a] < st[b] })
		out += fmt.Sprintf(" %s p50 %s p99 %s;", name, pct(st, 50), pct(st, 99))
	}
	return out
}

func (r *replier) wait(id string) chan struct{} {
	w := &waiter{done: make(chan struct{}), submit: time.Now()}
	r.waiters.Store(id, w)
	return w.done
}

type rig struct {
	p      *pipeline.Pipeline
	rep    *replier
	store  *sqlite.Store
	mem    bool   // the pipeline runs on another store than SQLite (store is idle)
	pg     *pgRig // that store, when it is PostgreSQL
	ts     *timedStore
	cancel context.CancelFunc
	done   chan struct{}
	dir    string
	seq    atomic.Int64
}

func newRig(m agent.Model, mailbox int, mem bool) (*rig, error) {
	dir, err := os.MkdirTemp("", "echogate-bench-")
	if err != nil {
		return nil, err
	}
	st, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "bench.db")}, nil)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := st.Open(ctx); err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	clock, err := builtin.NewCurrentTime(builtin.CurrentTimeConfig{})
	if err != nil {
		return nil, err
	}
	reg, err := tools.NewRegistry(clock)
	if err != nil {
		return nil, err
	}
	var store pipeline.Store = st
	var pg *pgRig
	switch {
	case mem:
		store = pipelinetest.NewMemStore()
	case pgURL != "":
		if pg, err = newPGRig(ctx, *pgLockConns); err != nil {
			return nil, err
		}
		store = pg.st
	}
	var ts *timedStore
	if *storeCalls {
		ts = &timedStore{Store: st, lat: map[string][]time.Duration{}}
		store = ts
	}
	rep := &replier{}
	p, err := pipeline.New(pipeline.Config{Model: "bench-model", MailboxSize: mailbox, TurnTimeout: time.Minute},
		pipeline.Deps{Store: store, Model: m, Tools: reg, Repliers: map[string]pipeline.Replier{"web": rep}})
	if err != nil {
		return nil, err
	}
	r := &rig{p: p, rep: rep, store: st, ts: ts, mem: mem || pg != nil, pg: pg, dir: dir, done: make(chan struct{})}
	var rctx context.Context
	rctx, r.cancel = context.WithCancel(ctx)
	go func() { defer close(r.done); _ = p.Run(rctx) }()
	<-p.Started()
	return r, nil
}

func (r *rig) close() {
	r.cancel()
	<-r.done
	r.store.Close()
	if r.pg != nil {
		r.pg.close()
	}
	os.RemoveAll(r.dir)
}

// turn submits one message and waits for its answer.
func (r *rig) turn(session string) error {
	id := fmt.Sprintf("e%d", r.seq.Add(1))
	ch := r.rep.wait(id)
	ev := echogate.InboundEvent{ID: id, Kind: echogate.KindDirect, Text: "what time is it?",
		Conversation: echogate.ConversationRef{Platform: "web", Channel: session, DM: true}, Actor: echogate.Actor{ID: "u-" + session}}
	if err := r.p.Submit(context.Background(), ev); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("turn %s not answered within a minute", id)
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

// window is what the throughput scenarios measure beside the rate, over the measurement
// window only.
type window struct {
	cpu, sys time.Duration // process CPU (user+system) and its system part
	wall     time.Duration
	sched    string // goroutine scheduling latency (runnable → running), rendered
}

func throughput(sessions int, d, latency time.Duration) error {
	r, err := newRig(instantModel{delay: latency}, 32, *memStore)
	if err != nil {
		return err
	}
	defer r.close()
	var turns atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	// Sessions join over one model latency, as independent conversations do, and the rate is
	// measured after a warm-up of one second, over d.
	start := time.Now()
	from, stop := start.Add(time.Second), start.Add(time.Second+d)
	var wg sync.WaitGroup
	errc := make(chan error, sessions)
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(s) * latency / time.Duration(sessions))
			var mine []time.Duration
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := r.turn(fmt.Sprintf("t%d", s)); err != nil {
					errc <- err
					return
				}
				if now := time.Now(); now.After(from) && now.Before(stop) {
					mine = append(mine, now.Sub(t0))
					turns.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	time.Sleep(time.Until(from))
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
	w := window{cpu: cpuTime() - cpu0, sys: sysTime() - sys0, wall: time.Since(wall0), sched: schedLat().sub(sched0)}
	var ws sqlite.WriteStats
	if !r.mem {
		ws = r.store.WriteStats()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	rate := float64(turns.Load()) / d.Seconds()
	ideal := float64(sessions) / latency.Seconds()
	fmt.Printf("%10d %12d %12.0f %10.0f %11.1f%% %12s\n", sessions, turns.Load(), rate, ideal, 100*rate/ideal, pct(lat, 99))
	fmt.Printf("%10s stages:%s\n", "", r.rep.stageReport())
	fmt.Printf("%10s CPU %.0f%% of one core (system %.0f%%), %s per turn; scheduling latency %s\n", "",
		100*w.cpu.Seconds()/w.wall.Seconds(), 100*w.sys.Seconds()/w.wall.Seconds(),
		(w.cpu / time.Duration(max(turns.Load(), 1))).Round(time.Microsecond), w.sched)
	if !r.mem {
		n, c, b := ws.Batches-ws0.Batches, ws.Calls-ws0.Calls, ws.Busy-ws0.Busy
		fmt.Printf("%10s SQLite writer busy %.0f%%, %d group commits of %.1f calls (%s each)\n", "",
			100*b.Seconds()/w.wall.Seconds(), n, float64(c)/float64(max(n, 1)), (b / time.Duration(max(n, 1))).Round(time.Microsecond))
	}
	if r.ts != nil {
		fmt.Print(r.ts.report())
	}
	return nil
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
