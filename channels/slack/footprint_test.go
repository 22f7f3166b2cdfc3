package slack

import (
	"fmt"
	"runtime"
	"testing"
)

// allocatedBy returns the fewest heap bytes f allocated over a few runs (the fewest, so that
// another goroutine allocating meanwhile does not count).
func allocatedBy(f func()) uint64 {
	least := ^uint64(0)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// An idle Slack channel holds its caches' entries, not their capacity: New used to size every
// LRU's map for its bound (about 2.4 MiB before the first event).
func TestNewAllocatesNoCacheCapacity(t *testing.T) {
	var keep *Channel
	got := allocatedBy(func() {
		c, err := New(Config{BotToken: "xoxb-test", AppToken: "xapp-test"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		keep = c
	})
	runtime.KeepAlive(keep)
	if limit := uint64(256 << 10); got > limit {
		t.Errorf("New allocated %d bytes, want at most %d", got, limit)
	}
}

// TestLRURecency: Get and Add refresh a key, AddIfAbsent neither replaces nor refreshes one.
func TestLRURecency(t *testing.T) {
	c := newLRU[string, int](2)
	c.Add("a", 1)
	c.Add("b", 2)
	c.Get("a")    // a is now the most recent: adding c evicts b
	c.Add("c", 3) // a, c
	if _, ok := c.Get("b"); ok {
		t.Errorf("Get(b) after Get(a) and Add(c) = present, want evicted")
	}
	if c.AddIfAbsent("a", 10) { // a is present: no change, no refresh (order stays a, c)
		t.Errorf("AddIfAbsent(a) = true, want false (present)")
	}
	if v, _ := c.Get("a"); v != 1 {
		t.Errorf("Get(a) after AddIfAbsent(a, 10) = %d, want 1", v)
	}
	c.Add("d", 4) // a was just read: c goes
	if _, ok := c.Get("c"); ok {
		t.Errorf("Get(c) = present, want evicted")
	}
	c.Remove("a")
	if _, ok := c.Get("a"); ok {
		t.Errorf("Get(a) after Remove = present, want gone")
	}
	if !c.AddIfAbsent("e", 5) {
		t.Errorf("AddIfAbsent(e) = false, want true (absent)")
	}
}

func TestLRUBound(t *testing.T) {
	for _, tt := range []struct {
		max, added int
		wantLen    int
		wantFirst  bool // the first key added is still there
	}{
		{max: 3, added: 2, wantLen: 2, wantFirst: true},
		{max: 3, added: 3, wantLen: 3, wantFirst: true},
		{max: 3, added: 4, wantLen: 3, wantFirst: false},
		{max: 4096, added: 5000, wantLen: 4096, wantFirst: false},
	} {
		c := newLRU[string, int](tt.max)
		for i := range tt.added {
			c.Add(fmt.Sprint(i), i)
		}
		_, first := c.Get("0")
		if got := c.c.Len(); got != tt.wantLen || first != tt.wantFirst {
			t.Errorf("newLRU(%d) after %d adds: len %d, first kept %v; want len %d, first kept %v",
				tt.max, tt.added, got, first, tt.wantLen, tt.wantFirst)
		}
	}
}
