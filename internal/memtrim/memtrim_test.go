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
		var total uint64
		var got []int
		for i, a := range tt.allocs {
			total += a
			if w.observe(total) {
				got = append(got, i+1)
			}
		}
		if !slices.Equal(got, tt.want) {
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
		var total uint64
		var got []int
		for i, a := range tt.allocs {
			total += a
			if w.observe(total) {
				got = append(got, i+1)
			}
		}
		if !slices.Equal(got, tt.want) {
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
		var total uint64
		var got []int
		for i, a := range tt.allocs {
			total += a
			if w.observe(total) {
				got = append(got, i+1)
			}
		}
		if !slices.Equal(got, tt.want) {
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
