// Package memtrim gives a quiet process's freed heap back to the operating system. After a burst
// of load the Go runtime keeps the pages it freed for reuse and returns them only slowly (the
// background scavenger), and a heap that stops allocating is not collected again for up to two
// minutes: a gateway that served a thousand sessions kept hundreds of MiB resident long after
// the last turn. Run watches the allocation rate and, when a busy period has ended, collects and
// releases the free pages once, then again every FollowUp, FollowUps times, while the process
// stays quiet: state that owners give back on their own timers shortly after load (idle
// keep-alive connections, the web channel's replay buffers after their grace period, the
// pipeline's idle sessions' caches) is freed only after the first release.
package memtrim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Config tunes Run. The zero value means the defaults.
type Config struct {
	// Every is how often the allocation counter is read. Default 5s.
	Every time.Duration
	// QuietBytes: an interval that allocated less is quiet. Default 2 MiB.
	QuietBytes uint64
	// BusyBytes: an interval that allocated more is busy; a quiet interval after a busy one
	// releases memory. Default 64 MiB.
	BusyBytes uint64
	// FollowUp is how long after a release the next one follows while the process stays
	// quiet. Default 20s; a negative value turns follow-ups off.
	FollowUp time.Duration
	// FollowUps is how many follow-up releases a busy period gets at most. Default 3: the
	// last comes about a minute after the load, once the gateway's idle timers (30 s) fired.
	FollowUps int
	// Allocated returns the bytes allocated since start; default runtime/metrics'
	// /gc/heap/allocs:bytes.
	Allocated func() uint64
	// Release returns the free heap to the OS; default debug.FreeOSMemory (which collects
	// first).
	Release func()
	// AtStart counts the process's start as a busy period of its own: the first quiet interval
	// releases once (without follow-ups) what start-up left behind, such as its garbage and
	// the executable's pages only start-up touched (serve's Release drops those).
	AtStart bool
	// Tick is the interval source; default a time.Ticker of Every.
	Tick func(d time.Duration) (<-chan time.Time, func())
}

func (c Config) withDefaults() Config {
	if c.Every <= 0 {
		c.Every = 5 * time.Second
	}
	if c.QuietBytes == 0 {
		c.QuietBytes = 2 << 20
	}
	if c.BusyBytes == 0 {
		c.BusyBytes = 64 << 20
	}
	if c.FollowUp == 0 {
		c.FollowUp = 20 * time.Second
	}
	if c.FollowUps <= 0 {
		c.FollowUps = 3
	}
	if c.Allocated == nil {
		c.Allocated = heapAllocs
	}
	if c.Release == nil {
		c.Release = debug.FreeOSMemory
	}
	if c.Tick == nil {
		c.Tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	return c
}

// Run watches until ctx ends and returns nil. Busy means at least BusyBytes were allocated
// since the last release (over any number of intervals); the first quiet interval after that
// releases, and each FollowUp after it (up to FollowUps) at the first quiet interval once it is
// due, unless an interval as busy as a whole busy period came in between. An idle process
// therefore pays for at most 1+FollowUps releases per busy period.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	tick, stop := cfg.Tick(cfg.Every)
	defer stop()
	w := watcher{quiet: cfg.QuietBytes, busy: cfg.BusyBytes, last: cfg.Allocated(), start: cfg.AtStart}
	if cfg.FollowUp > 0 {
		w.follow = max(1, int(cfg.FollowUp/cfg.Every))
		w.followUps = cfg.FollowUps
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
		if w.observe(cfg.Allocated()) {
			cfg.Release()
			w.last = cfg.Allocated()
		}
	}
}

// watcher decides, interval by interval, when to release.
type watcher struct {
	quiet, busy uint64
	last        uint64 // the allocation counter at the previous interval
	since       uint64 // bytes allocated since the last release
	follow      int    // intervals from a release to its follow-up; 0: none
	followUps   int    // follow-ups per busy period (0 means 1 when follow is set)
	countdown   int    // intervals left until the pending follow-up; 0: none pending
	left        int    // follow-ups left after the pending one
	start       bool   // the start-up release is pending (Config.AtStart)
}

// observe takes the allocation counter at the end of an interval and reports whether to
// release now. A follow-up that falls due in an interval that was not quiet waits for the next
// quiet one (an owner releasing its state allocates a little too); an interval that allocated
// BusyBytes on its own cancels the follow-ups (load is back: it ends with a release of its own).
func (w *watcher) observe(allocated uint64) bool {
	delta := allocated - w.last
	w.last = allocated
	w.since += delta
	if w.start && delta < w.quiet && w.since < w.busy {
		w.start, w.since = false, 0
		return true
	}
	if delta < w.quiet && w.since >= w.busy {
		w.since, w.start = 0, false
		w.countdown, w.left = w.follow, max(1, w.followUps)-1
		return true
	}
	if w.countdown == 0 {
		return false
	}
	if delta >= w.busy {
		w.countdown, w.left = 0, 0
		return false
	}
	if w.countdown > 1 {
		w.countdown--
		return false
	}
	if delta >= w.quiet {
		return false // due, but wait for a quiet interval
	}
	w.since = 0
	w.countdown = 0
	if w.left > 0 {
		w.countdown = w.follow
		w.left--
	}
	return true
}

func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
