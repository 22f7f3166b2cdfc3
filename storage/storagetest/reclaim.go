package storagetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Reclaimer is the optional event takeover a store offers for replays across replicas.
type Reclaimer interface {
	Store
	ReclaimEvent(ctx context.Context, key string, staleBefore, now time.Time) (bool, error)
}

// RunReclaim checks ReclaimEvent: only stale unfinished events are taken over, by exactly one of
// several concurrent callers, and a reclaimed event is fresh again.
func RunReclaim(t *testing.T, open func(t *testing.T) Reclaimer) {
	ctx := context.Background()
	s := open(t)
	base := time.Now().UTC().Truncate(time.Millisecond)
	key := func(n string) string { return fmt.Sprintf("reclaim:%d:%s", base.UnixNano(), n) }
	if _, err := s.ClaimEvent(ctx, key("old"), []byte(`{}`), base.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimEvent(ctx, key("fresh"), []byte(`{}`), base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimEvent(ctx, key("done"), []byte(`{}`), base.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteEvent(ctx, key("done"), base); err != nil {
		t.Fatal(err)
	}
	stale := base.Add(-time.Minute)
	for _, tt := range []struct {
		key  string
		want bool
	}{{key("fresh"), false}, {key("done"), false}, {key("unknown"), false}} {
		if got, err := s.ReclaimEvent(ctx, tt.key, stale, base); err != nil || got != tt.want {
			t.Errorf("ReclaimEvent(%s) = %v, %v; want %v", tt.key, got, err, tt.want)
		}
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.ReclaimEvent(ctx, key("old"), stale, base)
			if err != nil {
				t.Errorf("ReclaimEvent: %v", err)
			}
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("concurrent reclaims won %d times, want exactly 1", wins.Load())
	}
	// Reclaimed, it is fresh: not stale again until its new claim time is old.
	if ok, _ := s.ReclaimEvent(ctx, key("old"), stale, base); ok {
		t.Error("a just reclaimed event was reclaimed again")
	}
	if _, err := s.ReclaimEvent(ctx, "", stale, base); err == nil {
		t.Error("ReclaimEvent with an empty key succeeded")
	}
}
