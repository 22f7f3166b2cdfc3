package main

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
)

// releasingStore is a store that counts ReleaseMemory calls (only that method is called).
type releasingStore struct {
	store
	calls int
	err   error
}

func (s *releasingStore) ReleaseMemory(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("no deadline")
	}
	s.calls++
	return s.err
}

// memtrim's release gives back the store's memory too, with a bound on how long it waits, and
// a store that fails to does not stop the heap's release.
func TestReleaseMemoryCallsStore(t *testing.T) {
	for name, st := range map[string]*releasingStore{
		"ok":     {},
		"failed": {err: errors.New("closed")},
	} {
		c := &core{store: st, log: slog.New(slog.DiscardHandler)}
		release := c.releaseMemory(context.Background())
		release()
		release()
		if st.calls != 2 {
			t.Errorf("%s: store ReleaseMemory calls after two releases = %d, want 2", name, st.calls)
		}
	}
	// A store without ReleaseMemory (PostgreSQL) releases only the heap.
	c := &core{store: struct{ store }{}, log: slog.New(slog.DiscardHandler)}
	c.releaseMemory(context.Background())()
}

// memtrim's release also unmaps the executable's read-only pages (internal/textpages), after
// the heap's, and says so at debug level.
func TestReleaseMemoryReleasesText(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the executable's pages are released on Linux only (internal/textpages)")
	}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := &core{store: struct{ store }{}, log: log}
	c.releaseMemory(context.Background())()
	out := logged.String()
	if !strings.Contains(out, "released memory") || strings.Contains(out, "text_mappings=0 ") || !strings.Contains(out, "text_mappings=") {
		t.Fatalf("release logged %q, want the executable's mappings released", out)
	}
}
