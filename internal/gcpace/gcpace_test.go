package gcpace

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 100}, {1 * mib, 100}, {16 * mib, 100}, {20 * mib, 80}, {24 * mib, 66}, {32 * mib, 50},
		{56 * mib, 50}, {1 << 40, 50},
	} {
		if got := Percent(tt.live, 16*mib); got != tt.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tt.live/mib, got, tt.want)
		}
	}
	// The heap's goal never falls as the live heap grows, or the collector would run sooner
	// with more live data than with less.
	prev := uint64(0)
	for live := uint64(0); live <= 128*mib; live += mib / 4 {
		goal := live + live*uint64(Percent(live, 16*mib))/100
		if goal+live/100 < prev { // integer percent rounds down by less than 1%
			t.Fatalf("goal at %d MiB live is %d, below %d just before", live/mib, goal, prev)
		}
		prev = goal
	}
}

// recorder is a Config.Set that records what Run set.
type recorder struct {
	mu  sync.Mutex
	cur int
	set []int
}

func (r *recorder) Set(p int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.cur
	r.cur = p
	r.set = append(r.set, p)
	return was
}

func (r *recorder) current() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// waitPercent runs collections until Run set want (each collection wakes it once).
func waitPercent(t *testing.T, r *recorder, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.current() != want {
		if time.Now().After(deadline) {
			r.mu.Lock()
			set := append([]int(nil), r.set...)
			r.mu.Unlock()
			t.Fatalf("percent is %d after 10 s of collections, want %d (set: %v)", r.current(), want, set)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// TestRunPaces: after each real collection Run reads the live heap and sets the percent; it
// restores 100 when its context ends.
func TestRunPaces(t *testing.T) {
	var live atomic.Uint64
	r := &recorder{cur: 100}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, Config{Knee: 16 << 20, Live: live.Load, Set: r.Set})
	}()
	live.Store(64 << 20)
	waitPercent(t, r, 50)
	live.Store(24 << 20)
	waitPercent(t, r, 66)
	live.Store(23 << 20) // 69: a step under minStep is not applied
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if p := r.current(); p != 66 {
		t.Fatalf("percent %d after a small change of the live heap, want 66 kept", p)
	}
	live.Store(1 << 20)
	waitPercent(t, r, 100)
	live.Store(40 << 20)
	waitPercent(t, r, 50)
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if p := r.current(); p != 100 {
		t.Fatalf("percent %d after Run returned, want 100 restored", p)
	}
}

// TestRunLeavesOperatorsPercent: a percent other than 100 when Run starts (GOGC set) is the
// operator's; Run restores it and returns.
func TestRunLeavesOperatorsPercent(t *testing.T) {
	r := &recorder{cur: 200}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), Config{Set: r.Set}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run paces a percent the operator set")
	}
	if r.current() != 200 {
		t.Fatalf("percent %d, want the operator's 200 kept", r.current())
	}
}

// TestLiveHeap: the default Live reads the runtime's live heap.
func TestLiveHeap(t *testing.T) {
	keep := make([]byte, 8<<20)
	runtime.GC()
	if got := liveHeap(); got < 8<<20 {
		t.Fatalf("live heap %d bytes with 8 MiB held", got)
	}
	runtime.KeepAlive(keep)
}
