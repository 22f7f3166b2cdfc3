package main

import (
	"flag"
	"fmt"
	"slices"
	"time"
)

var (
	repeatFlag = flag.Int("repeat", 3, "after the throughput scenarios, run the largest one this many more times with new sessions, reading memory -repeat-settle after each: whether what stays after a load grows from round to round (0: skip)")
	repeatWait = flag.Duration("repeat-settle", 15*time.Second, "wait after each repeated round before its memory is read")
)

// repeats runs n rounds of `sessions` new sessions each (new users every round: the caches
// fill with new conversations, not the same ones again) and reads the gateway's memory settle
// after each round ends. A gateway whose state is bounded by bytes ends each round at about
// the same memory; one that keeps something per session or per turn grows by about the same
// step every round.
func (b *bench) repeats(sessions, n int, settle time.Duration) error {
	if n <= 0 || sessions <= 0 {
		return nil
	}
	fmt.Printf("\nrepeated load: %d rounds of %d new sessions for %s each; memory %s after each round\n", n, sessions, *duration, settle)
	fmt.Printf("%10s %10s %22s %22s %16s %14s\n", "round", "turns", "VmRSS/RssAnon peak", "VmRSS/RssAnon after", "Go heap in use", "heap objects")
	var after []memParts
	for r := 1; r <= n; r++ {
		turns0 := b.turns
		run, err := b.run(sessions, true)
		if err != nil {
			return fmt.Errorf("repeated round %d: %w", r, err)
		}
		time.Sleep(settle)
		b.snapshot(fmt.Sprintf("repeated round %d, %s after", r, settle))
		p, err := readMemParts(b.base, b.gw.pid())
		if err != nil {
			return fmt.Errorf("repeated round %d: %w", r, err)
		}
		after = append(after, p)
		fmt.Printf("%10d %10d %22s %22s %16s %14s\n", r, b.turns-turns0, run.peak, p.mem, mib(p.heapInuse), mib(p.heapLive))
	}
	first, last := after[0], after[len(after)-1]
	rss := make([]int64, len(after))
	for i, p := range after {
		rss[i] = p.mem.rss
	}
	fmt.Printf("  after round %d vs round 1: VmRSS %+.1f MiB, Go heap in use %+.1f MiB (range over the rounds %s–%s)\n", n,
		float64(last.mem.rss-first.mem.rss)/(1<<20), float64(last.heapInuse-first.heapInuse)/(1<<20), mib(slices.Min(rss)), mib(slices.Max(rss)))
	return nil
}
