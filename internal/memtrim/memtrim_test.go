package memtrim

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestReleasesOnceAfterBusy: quiet intervals release only after a busy period, once.
func TestReleasesOnceAfterBusy(t *testing.T) {
	const mib = 1 << 20
	for name, tt := range map[string]struct {
		allocs []uint64 // bytes allocated in each interval
		want   []int    // intervals (1-based) that release
	}{
		"idle from start":       {[]uint64{0, 0, 0}, nil},
		"busy then quiet":       {[]uint64{100 * mib, 0, 0, 0}, []int{2}},
		"busy over two":         {[]uint64{40 * mib, 40 * mib, 1 * mib, 0}, []int{3}},
		"still busy":            {[]uint64{100 * mib, 50 * mib, 50 * mib}, nil},
		"two bursts":            {[]uint64{100 * mib, 0, 100 * mib, 0}, []int{2, 4}},
		"small load never busy": {[]uint64{10 * mib, 0, 10 * mib, 0}, nil},
	} {
		w := watcher{quiet: 2 * mib, busy: 64 * mib} // no follow-up
		if got := releases(&w, tt.allocs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: releases after intervals %v, want %v", name, got, tt.want)
		}
	}
}

// TestFollowUpRelease: a second release follows the first after follow intervals, at the first
// quiet one; an interval as busy as a busy period cancels it.
func TestFollowUpRelease(t *testing.T) {
	const mib = 1 << 20
	for name, tt := range map[string]struct {
		allocs []uint64 // bytes allocated in each interval
		want   []int    // intervals (1-based) that release
	}{
		"quiet after load":            {[]uint64{100 * mib, 0, 0, 0, 0, 0}, []int{2, 5}},
		"light load before follow-up": {[]uint64{100 * mib, 0, 10 * mib, 0, 0, 0}, []int{2, 5}},
		"due while not quiet":         {[]uint64{100 * mib, 0, 0, 10 * mib, 0, 0}, []int{2, 5}},
		"busy load cancels":           {[]uint64{100 * mib, 0, 64 * mib, 1 * mib, 1 * mib}, []int{2, 4}},
		"new burst after cancel":      {[]uint64{100 * mib, 0, 70 * mib, 0, 0, 0, 0}, []int{2, 4, 7}},
		"idle":                        {[]uint64{0, 0, 0, 0}, nil},
	} {
		w := watcher{quiet: 2 * mib, busy: 64 * mib, follow: 3}
		if got := releases(&w, tt.allocs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: releases after intervals %v, want %v", name, got, tt.want)
		}
	}
}

// TestSeveralFollowUps: follow-ups repeat every follow intervals, followUps times, while quiet.
func TestSeveralFollowUps(t *testing.T) {
	const mib = 1 << 20
	quiet := func(n int) []uint64 { return make([]uint64, n) }
	for name, tt := range map[string]struct {
		allocs []uint64 // bytes allocated in each interval
		want   []int    // intervals (1-based) that release
	}{
		"three after load":     {append([]uint64{100 * mib}, quiet(12)...), []int{2, 4, 6, 8}},
		"light load between":   {append([]uint64{100 * mib, 0, 0, 0, 10 * mib}, quiet(6)...), []int{2, 4, 6, 8}},
		"due while not quiet":  {append([]uint64{100 * mib, 0, 0, 10 * mib}, quiet(8)...), []int{2, 5, 7, 9}},
		"a new burst restarts": {append([]uint64{100 * mib, 0, 0, 0, 100 * mib}, quiet(8)...), []int{2, 4, 6, 8, 10, 12}},
		"quiet never releases": {quiet(8), nil},
	} {
		w := watcher{quiet: 2 * mib, busy: 64 * mib, follow: 2, followUps: 3}
		if got := releases(&w, tt.allocs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: releases after intervals %v, want %v", name, got, tt.want)
		}
	}
}

// TestRunReleases: Run reads the counter on every tick and releases after a busy period.
func TestRunReleases(t *testing.T) {
	ticks := make(chan time.Time)
	var counter atomic.Uint64
	released := make(chan struct{}, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- Run(ctx, Config{Allocated: counter.Load, Release: func() { released <- struct{}{} },
			Tick: func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }})
	}()
	ticks <- time.Time{}
	counter.Store(100 << 20) // a busy interval (the first or the second)…
	ticks <- time.Time{}
	ticks <- time.Time{} // …then a quiet one
	<-released
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

// TestStartRelease: with AtStart the first quiet interval releases once, with no follow-ups;
// a busy start-up is a busy period like any other (its release has them); a later burst is
// handled as without AtStart.
func TestStartRelease(t *testing.T) {
	const mib = 1 << 20
	for name, tt := range map[string]struct {
		allocs []uint64 // bytes allocated in each interval
		want   []int    // intervals (1-based) that release
	}{
		"quiet start":              {[]uint64{0, 0, 0, 0, 0, 0}, []int{1}},
		"small start, then quiet":  {[]uint64{10 * mib, 1 * mib, 0, 0, 0}, []int{2}},
		"busy start":               {[]uint64{100 * mib, 0, 0, 0, 0}, []int{2, 5}},
		"quiet start, later burst": {[]uint64{0, 100 * mib, 0, 0, 0, 0}, []int{1, 3, 6}},
		"start-up then small load": {[]uint64{0, 10 * mib, 0, 10 * mib, 0}, []int{1}},
	} {
		w := watcher{quiet: 2 * mib, busy: 64 * mib, follow: 3, start: true}
		if got := releases(&w, tt.allocs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: releases after intervals %v, want %v", name, got, tt.want)
		}
	}
}

// releases feeds w the allocation counter after each interval's allocs and returns the
// intervals (1-based) after which it released.
func releases(w *watcher, allocs []uint64) []int {
	var total uint64
	var got []int
	for i, a := range allocs {
		total += a
		if w.observe(total) {
			got = append(got, i+1)
		}
	}
	return got
}
