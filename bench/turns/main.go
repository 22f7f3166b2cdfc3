// Command turns measures the gateway's own cost per turn and its throughput, with the embedded
// SQLite store on. It reports figures; it never fails on them.
//
//	go run ./bench/turns                  # all scenarios
//	go run ./bench/turns -overhead=5000   # more turns for the overhead scenario
//
// Overhead: one session at a time, a model that answers at once and calls one tool (current_time)
// first, so each turn is two model calls, one tool call, and every store write of a real turn.
// Throughput: S sessions each sending its next message when the previous one is answered, with a
// model that answers in 200 ms without tools; ideal is S / 0.2 s turns per second.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/storage/sqlite"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
)

func main() {
	overheadTurns := flag.Int("overhead", 2000, "turns in the overhead scenario")
	duration := flag.Duration("duration", 5*time.Second, "length of each throughput scenario")
	latency := flag.Duration("latency", 200*time.Millisecond, "model latency in the throughput scenarios")
	sessions := flag.String("sessions", "1,100,1000", "concurrent sessions of the throughput scenarios")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the throughput scenarios")
	flag.Parse()

	fmt.Printf("echogate turn benchmark — %s, %d CPUs, GOMAXPROCS %d\n\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if err := overhead(*overheadTurns); err != nil {
		fmt.Fprintln(os.Stderr, "overhead:", err)
		os.Exit(1)
	}
	var ss []int
	for _, s := range splitInts(*sessions) {
		ss = append(ss, s)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	fmt.Printf("\nthroughput: model answers in %s, no tools, store on (SQLite, WAL)\n", *latency)
	fmt.Printf("%10s %12s %12s %10s %12s %12s\n", "sessions", "turns", "turns/s", "ideal", "% of ideal", "p99 latency")
	for _, s := range ss {
		if err := throughput(s, *duration, *latency); err != nil {
			fmt.Fprintln(os.Stderr, "throughput:", err)
			os.Exit(1)
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

// replier signals finished turns per event id and records when each stage was reached.
type replier struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
	marks   map[string]*marks
	stages  [3][]time.Duration // submit→start, start→first token, last token→done
}

type marks struct{ submit, start, first, last time.Time }

func (r *replier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	return echogate.MessageRef{Platform: "web", Channel: out.Conversation.Channel, ID: "m"}, nil
}

func (r *replier) ObserveTurn(ev echogate.TurnEvent) {
	now := time.Now()
	r.mu.Lock()
	m := r.marks[ev.EventID]
	if m != nil {
		switch ev.Type {
		case echogate.TurnStarted:
			m.start = now
		case echogate.TurnDelta:
			if m.first.IsZero() {
				m.first = now
			}
			m.last = now
		}
	}
	if ev.Type != echogate.TurnDone {
		r.mu.Unlock()
		return
	}
	if m != nil && !m.start.IsZero() && !m.first.IsZero() {
		r.stages[0] = append(r.stages[0], m.start.Sub(m.submit))
		r.stages[1] = append(r.stages[1], m.first.Sub(m.start))
		r.stages[2] = append(r.stages[2], now.Sub(m.last))
	}
	delete(r.marks, ev.EventID)
	ch := r.waiters[ev.EventID]
	delete(r.waiters, ev.EventID)
	r.mu.Unlock()
	if ch != nil {
		close(ch)
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
	ch := make(chan struct{})
	r.mu.Lock()
	r.waiters[id] = ch
	r.marks[id] = &marks{submit: time.Now()}
	r.mu.Unlock()
	return ch
}

type rig struct {
	p      *pipeline.Pipeline
	rep    *replier
	store  *sqlite.Store
	cancel context.CancelFunc
	done   chan struct{}
	dir    string
	seq    atomic.Int64
}

func newRig(m agent.Model, mailbox int) (*rig, error) {
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
	rep := &replier{waiters: map[string]chan struct{}{}, marks: map[string]*marks{}}
	p, err := pipeline.New(pipeline.Config{Model: "bench-model", MailboxSize: mailbox, TurnTimeout: time.Minute},
		pipeline.Deps{Store: st, Model: m, Tools: reg, Repliers: map[string]pipeline.Replier{"web": rep}})
	if err != nil {
		return nil, err
	}
	r := &rig{p: p, rep: rep, store: st, dir: dir, done: make(chan struct{})}
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

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func overhead(n int) error {
	r, err := newRig(instantModel{tools: true}, 32)
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
	r, err := newRig(instantModel{delay: latency}, 32)
	if err != nil {
		return err
	}
	defer r.close()
	var turns atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	errc := make(chan error, sessions)
	start := time.Now()
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := r.turn(fmt.Sprintf("t%d", s)); err != nil {
					errc <- err
					return
				}
				mine = append(mine, time.Since(t0))
				turns.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errc:
		return err
	default:
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	rate := float64(turns.Load()) / elapsed.Seconds()
	ideal := float64(sessions) / latency.Seconds()
	fmt.Printf("%10d %12d %12.0f %10.0f %11.1f%% %12s\n", sessions, turns.Load(), rate, ideal, 100*rate/ideal, pct(lat, 99))
	fmt.Printf("%10s stages:%s\n", "", r.rep.stageReport())
	return nil
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
