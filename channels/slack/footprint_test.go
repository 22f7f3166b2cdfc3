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
		if got := len(c.m); got != tt.wantLen || c.ll.Len() != tt.wantLen || first != tt.wantFirst {
			t.Errorf("newLRU(%d) after %d adds: len %d (list %d), first kept %v; want len %d, first kept %v",
				tt.max, tt.added, got, c.ll.Len(), first, tt.wantLen, tt.wantFirst)
		}
	}
}
