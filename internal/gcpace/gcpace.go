// Package gcpace narrows the garbage collector's headroom while the live heap is large.
//
// With the runtime's default (GOGC=100) the heap grows to twice its live data before each
// collection. For a gateway that is idle or serves a few conversations the live heap is a few
// MiB, and that headroom is what keeps collections rare: halving it (GOGC=50) made each
// spaced-out turn cost ~10% more CPU, as a small heap is collected twice as often. Under heavy
// load the live heap is tens of MiB (1,000 turns in flight held ~56 MiB), and the same rule
// keeps as much again of garbage resident: the gateway peaked near 200 MiB, ~170 MiB with
// GOGC=50 at the same throughput and CPU per turn, since the collector's work is proportional
// to the live heap, not to the headroom.
//
// Run sets the headroom after each collection from the live heap it left: all of it up to
// Knee (GOGC 100), then Knee, then half of it from twice Knee on (GOGC 50). The memory limit
// (runtime.memory_limit, GOMEMLIMIT) works on top of this unchanged, and a GOGC set in the
// environment is the operator's choice: serve does not run the pacer then.
package gcpace

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// DefaultKnee is the live heap from which the headroom stops growing with it.
const DefaultKnee = 16 << 20

// Config tunes Run. The zero value means the defaults.
type Config struct {
	// Knee is the live heap, in bytes, up to which the headroom equals it; default DefaultKnee.
	Knee uint64
	// Live returns the live heap after the last collection; default runtime/metrics'
	// /gc/heap/live:bytes.
	Live func() uint64
	// Set sets the collector's percent and returns the previous one; default
	// debug.SetGCPercent.
	Set func(percent int) int
}

func (c Config) withDefaults() Config {
	if c.Knee == 0 {
		c.Knee = DefaultKnee
	}
	if c.Live == nil {
		c.Live = liveHeap
	}
	if c.Set == nil {
		c.Set = debug.SetGCPercent
	}
	return c
}

// Percent is the collector percent (GOGC) for a live heap of live bytes: the headroom is live
// up to knee, then knee, then live/2, so the heap's goal (live plus headroom) never falls as
// the live heap grows. The result is between 50 and 100.
func Percent(live, knee uint64) int {
	if live <= knee {
		return 100
	}
	headroom := max(knee, live/2)
	return max(50, min(100, int(headroom*100/live)))
}

// minStep is the least change of percent Run applies: smaller moves of the live heap leave the
// collector's setting alone.
const minStep = 5

// Run paces the collector until ctx ends, then restores GOGC 100. It wakes once after each
// collection (a cleanup of an object allocated for that), never polls, and costs a read of one
// runtime metric per collection. When the percent is not 100 as Run starts (GOGC was set, or
// debug.SetGCPercent was called), it leaves the collector alone. It returns nil when ctx ends.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	if was := cfg.Set(100); was != 100 {
		cfg.Set(was)
		return nil
	}
	cycles := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	arm(cycles, done)
	cur := 100
	defer func() { cfg.Set(100) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-cycles:
		}
		p := Percent(cfg.Live(), cfg.Knee)
		if p != cur && (p-cur >= minStep || cur-p >= minStep || p == 100) {
			cfg.Set(p)
			cur = p
		}
	}
}

// sentinel is allocated for one collection: its cleanup runs after the collection that found
// it unreachable. It holds a pointer, so the allocator does not pack it with other small
// objects (whose liveness would keep it alive).
type sentinel struct {
	_ *sentinel
	_ [16]byte
}

// arm allocates a sentinel whose cleanup reports a collection on cycles (without blocking: one
// report pending is enough) and arms the next one, until done is closed.
func arm(cycles chan<- struct{}, done <-chan struct{}) {
	runtime.AddCleanup(new(sentinel), func(struct{}) {
		select {
		case <-done:
			return
		default:
		}
		select {
		case cycles <- struct{}{}:
		default:
		}
		arm(cycles, done)
	}, struct{}{})
}

// liveHeap reads the live heap the last collection marked.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
