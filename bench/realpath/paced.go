package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"time"
)

var (
	pacedFlag   = flag.Int("paced", 1000, "sessions of the paced scenario: each posts a message every -pace, as people chat (0: skip)")
	paceFlag    = flag.Duration("pace", 10*time.Second, "how often each session of the paced scenario posts, on average (±25%)")
	pacedWindow = flag.Duration("paced-window", 30*time.Second, "measurement window of the paced scenario, after every session posted once")
)

// paced runs the scenario the throughput runs are the opposite of: `sessions` conversations open
// at once, each posting its next message about every `pace` (±25%, so they do not march in
// step), with the -model-latency model. The throughput scenarios keep every session's next
// turn in flight at once (a closed loop: the gateway holds `sessions` turns whatever its speed);
// here the gateway holds what 1000 open conversations cost — their keep-alive connections,
// sessions, caches — and only the few turns that are running. It reports the offered and
// served rate, latency, CPU per turn, the turns in flight on average and the memory peak.
func (b *bench) paced(sessions int, pace time.Duration) error {
	if sessions <= 0 || pace <= 0 {
		return nil
	}
	fmt.Printf("\npaced: %d sessions, each posting about every %s (±25%%), model answers in %s; window %s after each session posted once\n",
		sessions, pace, *modelLatency, *pacedWindow)
	l := newSessionLoad(b, sessions)
	for i := range sessions {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		// Sessions join spread over one pace: the load is steady from the first round.
		l.session(fmt.Sprintf("p%d-%d", sessions, i), pace*time.Duration(i)/time.Duration(sessions), func() time.Duration {
			return pace*3/4 + time.Duration(rng.Int64N(int64(pace/2)+1))
		})
	}
	if !sleepCtx(l.ctx, pace+*modelLatency) {
		if _, err := l.stop(); err != nil {
			return fmt.Errorf("paced: %w", err)
		}
		return fmt.Errorf("paced: %w", l.ctx.Err())
	}
	w := l.measure(*pacedWindow, fmt.Sprintf("%d paced sessions", sessions))
	lat, err := l.stop()
	if err != nil {
		return fmt.Errorf("paced: %w", err)
	}
	n := len(lat)
	if n == 0 {
		return fmt.Errorf("paced: no turn finished in the window")
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	rate := float64(n) / w.elapsed.Seconds()
	fmt.Printf("%10s %10s %10s %10s %12s %12s %12s %12s %22s\n", "sessions", "turns", "turns/s", "offered", "p50 latency", "p99 latency", "CPU/turn", "in flight", "VmRSS/RssAnon peak")
	fmt.Printf("%10d %10d %10.0f %10.0f %12s %12s %12s %12.1f %22s\n", sessions, n, rate, float64(sessions)/pace.Seconds(),
		ms(pct(lat, 50)), ms(pct(lat, 99)), ms(w.cpu/time.Duration(n)), rate*(sum/time.Duration(n)).Seconds(), w.peak)
	if p, err := readMemParts(b.base, b.gw.pid()); err == nil {
		fmt.Printf("%10s at the end: %s\n", "", p)
	}
	return nil
}
