package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// bench holds the running gateway and the totals the figures are computed from.
type bench struct {
	ctx            context.Context
	base, modelURL string
	gw, model      *process
	dataDir        string
	turns          int64 // turns done so far, for the database bytes per turn
	// direct50 and direct99 are the direct model call's p50 and p99 (set by overheads).
	direct50, direct99 time.Duration
	peak               memInfo
	rounds             int  // throughput scenarios run so far
	snapshots          int  // SIGUSR1 snapshots asked of the gateway so far (-profile)
	noSnapshots        bool // gw is not a gateway (the floor proxy): no -profile snapshots
}

// overheads runs the instant-model scenarios: plain turns and one-tool turns, one session.
func (b *bench) overheads() error {
	c := newClient(4)
	direct := make([]time.Duration, 0, *turnsFlag)
	for i := range *turnsFlag {
		d, err := directCall(b.ctx, c, b.modelURL, fmt.Sprintf("direct %d", i))
		if err != nil {
			return fmt.Errorf("direct model call: %w", err)
		}
		direct = append(direct, d)
	}
	slices.Sort(direct)
	d50, d99 := pct(direct, 50), pct(direct, 99)
	b.direct50, b.direct99 = d50, d99
	wire := "HTTP/1.1"
	if *modelTLS {
		wire = "HTTPS, HTTP/2"
	}
	fmt.Printf("direct model call (streaming, instant model, %s): p50 %s p99 %s\n", wire, ms(d50), ms(d99))
	fmt.Printf("%-22s %8s %14s %14s %14s %12s %14s %14s %14s\n", "overhead scenario", "turns", "turn p50", "overhead p50", "overhead p99", "CPU/turn", "others/turn", "syscalls/turn", "switches/turn")
	for _, sc := range []struct{ name, prefix string }{{"plain turn", ""}, {"one-tool turn", toolPrefix}} {
		if !overheadWanted(sc.name) {
			continue
		}
		// A short warm-up so connections, caches and the first session's state exist.
		if _, err := b.sequential(c, sc.prefix, "warm-"+sc.name, 20); err != nil {
			return err
		}
		cpu0, err := cpuTime(b.gw.pid())
		if err != nil {
			return err
		}
		other0 := b.othersCPU()
		k0, err := readCounters(b.gw.pid())
		if err != nil {
			return err
		}
		lat, err := b.sequential(c, sc.prefix, "o-"+sc.name, *turnsFlag)
		if err != nil {
			return err
		}
		cpu1, _ := cpuTime(b.gw.pid())
		other1 := b.othersCPU()
		k1, _ := readCounters(b.gw.pid())
		slices.Sort(lat)
		n := time.Duration(len(lat))
		fmt.Printf("%-22s %8d %14s %14s %14s %12s %14s %14s %14s\n", sc.name, len(lat), ms(pct(lat, 50)),
			ms(pct(lat, 50)-d50), ms(pct(lat, 99)-d99), ms((cpu1-cpu0)/n), ms((other1-other0)/n),
			perTurn(k0.syscalls, k1.syscalls, len(lat)), perTurn(k0.switches, k1.switches, len(lat)))
	}
	return nil
}

// overheadWanted reports whether -overhead selects the scenario named name ("plain turn"
// matches "plain", "one-tool turn" matches "tool").
func overheadWanted(name string) bool {
	for _, f := range strings.Split(*overheadFlag, ",") {
		if f = strings.TrimSpace(f); f != "" && strings.Contains(name, f) {
			return true
		}
	}
	return false
}

// sequential runs n turns one after the other in one session and returns their latencies.
func (b *bench) sequential(hc *http.Client, prefix, session string, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for i := range n {
		d, err := chatTurn(b.ctx, hc, b.base, sanitize(session), fmt.Sprintf("%smessage %d", prefix, i))
		if err != nil {
			return nil, fmt.Errorf("turn %d of %s: %w", i, session, err)
		}
		lat = append(lat, d)
		atomic.AddInt64(&b.turns, 1)
	}
	return lat, nil
}

// throughputs runs each session count for -duration after the sessions joined.
func (b *bench) throughputs(counts []int) error {
	fmt.Printf("\nthroughput: model answers in %s, no tools; rate over %s after the sessions joined\n", *modelLatency, *duration)
	fmt.Printf("%10s %10s %10s %10s %12s %12s %12s %14s %22s\n", "sessions", "turns", "turns/s", "ideal", "% of ideal", "p99 latency", "CPU/turn", "others/turn", "VmRSS/RssAnon peak")
	for _, s := range counts {
		if err := b.throughput(s); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) throughput(sessions int) error {
	r, err := b.run(sessions, *freshSessions)
	if err != nil {
		return err
	}
	rate := float64(r.turns) / r.elapsed.Seconds()
	ideal := float64(sessions) / modelLatency.Seconds()
	perTurn, others := time.Duration(0), time.Duration(0)
	if r.turns > 0 {
		perTurn = r.cpu / time.Duration(r.turns)
		others = r.others / time.Duration(r.turns)
	}
	fmt.Printf("%10d %10d %10.0f %10.0f %11.1f%% %12s %12s %14s %22s\n", sessions, r.turns, rate, ideal, 100*rate/ideal, ms(pct(r.lat, 99)), ms(perTurn), ms(others), r.peak)
	if p, err := readMemParts(b.base, b.gw.pid()); err == nil {
		fmt.Printf("%10s at the end: %s\n", "", p)
	}
	return nil
}

// loadRun is what one throughput run measured over its window.
type loadRun struct {
	turns       int64
	elapsed     time.Duration
	lat         []time.Duration // sorted
	cpu, others time.Duration   // the gateway's; the model server's and this process's
	peak        memInfo
}

// run puts `sessions` sessions on the gateway, each posting its next message when the
// previous one is answered, measures -duration once they joined, and stops them. fresh names
// the sessions after this run, so they are new conversations; else a later run of the same
// count continues them.
func (b *bench) run(sessions int, fresh bool) (loadRun, error) {
	b.rounds++
	l := newSessionLoad(b, sessions)
	for i := range sessions {
		name := fmt.Sprintf("t%d-%d", sessions, i)
		if fresh {
			name = fmt.Sprintf("t%d-r%d-%d", sessions, b.rounds, i)
		}
		// Sessions join spread over one model latency, as users would.
		l.session(name, *modelLatency*time.Duration(i)/time.Duration(sessions), nil)
	}
	sleepCtx(l.ctx, 2**modelLatency)
	w := l.measure(*duration, fmt.Sprintf("%d sessions, mid-load", sessions))
	lat, err := l.stop()
	if err != nil {
		return loadRun{}, fmt.Errorf("%d sessions: %w", sessions, err)
	}
	return loadRun{turns: l.counted.Load(), elapsed: w.elapsed, lat: lat, cpu: w.cpu, others: w.others, peak: w.peak}, nil
}

// othersCPU is the CPU of the model server and of this load generator: what the gateway's
// turns cost the rest of the machine.
func (b *bench) othersCPU() time.Duration {
	m, _ := cpuTime(b.model.pid())
	self, _ := cpuTime(os.Getpid())
	return m + self
}

// sampleMem samples the gateway's memory every 100 ms for d and returns the peak. With -profile
// it takes the gateway's snapshot (what) halfway through.
func (b *bench) sampleMem(ctx context.Context, d time.Duration, what string) memInfo {
	var peak memInfo
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	end := time.After(d)
	mid := time.After(d / 2)
	for {
		if m, err := readMem(b.gw.pid()); err == nil {
			peak.rss, peak.anon = max(peak.rss, m.rss), max(peak.anon, m.anon)
		}
		select {
		case <-mid:
			b.snapshot(what)
		case <-t.C:
		case <-end:
			b.peak.rss, b.peak.anon = max(b.peak.rss, peak.rss), max(b.peak.anon, peak.anon)
			return peak
		case <-ctx.Done():
			return peak
		}
	}
}

// afterLoad reports memory some time after the load ended and the database per turn.
func (b *bench) afterLoad(idle memInfo, waits []time.Duration) error {
	fmt.Printf("\nmemory VmRSS / RssAnon: idle %s, peak under load %s\n", idle, b.peak)
	began := time.Now()
	for _, w := range waits {
		time.Sleep(time.Until(began.Add(w)))
		m, err := readMem(b.gw.pid())
		if err != nil {
			return err
		}
		fmt.Printf("  %s after load: %s (%.2f× idle RSS)\n", w, m, float64(m.rss)/float64(idle.rss))
		b.snapshot(fmt.Sprintf("%s after load", w))
		if p, err := readMemParts(b.base, b.gw.pid()); err == nil {
			fmt.Printf("    %s\n", p)
		}
	}
	db, wal := dirBytes(b.dataDir)
	fmt.Printf("database: %s after %d turns, %.0f bytes per turn (database files); write-ahead logs now %s (bounded by the checkpointer, emptied after 10 s idle)\n",
		mib(db), b.turns, float64(db)/float64(max(b.turns, 1)), mib(wal))
	return nil
}

// snapshot asks the gateway (serve -snapshot-dir) for its heap and goroutine profiles of this
// moment, when -profile is set, and says which numbered files hold them.
func (b *bench) snapshot(what string) {
	if *profileDir == "" || b.noSnapshots {
		return
	}
	b.snapshots++
	if err := b.gw.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		fmt.Printf("  snapshot %d (%s): %v\n", b.snapshots, what, err)
		return
	}
	fmt.Printf("  snapshot %d: %s → %s/{heap,goroutine}-%d.pprof\n", b.snapshots, what, *profileDir, b.snapshots)
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// sanitize makes a session id the web channel accepts (letters, digits, - and _).
func sanitize(s string) string {
	out := []rune(s)
	for i, r := range out {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			out[i] = '-'
		}
	}
	return string(out)
}
