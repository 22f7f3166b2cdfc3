package discord

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

// An idle Discord channel holds its caches' entries, not their capacity: New used to size the
// posted-message and thread sets for their bounds (about 0.9 MiB before the first event).
func TestNewAllocatesNoCacheCapacity(t *testing.T) {
	var keep *Channel
	got := allocatedBy(func() {
		c, err := New(Config{Token: "t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		keep = c
	})
	runtime.KeepAlive(keep)
	if limit := uint64(128 << 10); got > limit {
		t.Errorf("New allocated %d bytes, want at most %d", got, limit)
	}
}

func TestBoundedSets(t *testing.T) {
	for _, tt := range []struct{ max, added int }{{3, 2}, {3, 3}, {3, 4}, {3, 10}, {4096, 5000}} {
		s, k := newIDSet(tt.max), newKindCache(tt.max)
		for i := range tt.added {
			s.add(fmt.Sprint(i))
			k.add(fmt.Sprint(i), i%2 == 0)
		}
		wantLen, wantFirst := min(tt.max, tt.added), tt.added <= tt.max
		last := fmt.Sprint(tt.added - 1)
		_, kFirst := k.get("0")
		_, kLast := k.get(last)
		if len(s.ids) != wantLen || s.has("0") != wantFirst || !s.has(last) {
			t.Errorf("newIDSet(%d) after %d adds: len %d, first kept %v, last kept %v; want len %d, first kept %v",
				tt.max, tt.added, len(s.ids), s.has("0"), s.has(last), wantLen, wantFirst)
		}
		if len(k.m) != wantLen || kFirst != wantFirst || !kLast {
			t.Errorf("newKindCache(%d) after %d adds: len %d, first kept %v, last kept %v; want len %d, first kept %v",
				tt.max, tt.added, len(k.m), kFirst, kLast, wantLen, wantFirst)
		}
	}
}
