package sqlite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// holdWriter occupies the writer goroutine with a solo call until release is called, so the
// calls queued meanwhile run as one batch.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.st.Load().wr.do(context.Background(), true, func(*wtx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("held solo call: %v", err)
		}
	}
}

// notifyQueued makes the writer report each call entering its queue on the returned channel.
func notifyQueued(s *Store) <-chan struct{} {
	ch := make(chan struct{}, 64)
	hook := func() { ch <- struct{}{} }
	s.st.Load().wr.enqueued.Store(&hook)
	return ch
}

func TestGroupCommitIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	if err := s.CreateTurn(ctx, echogate.TurnRecord{ID: "taken", Session: "s"}); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	queued := notifyQueued(s)

	type result struct {
		name string
		err  error
		ok   bool
	}
	results := make(chan result, 8)
	var wg sync.WaitGroup
	queue := func(name string, fn func() (bool, error)) {
		wg.Go(func() {
			ok, err := fn()
			results <- result{name, err, ok}
		})
	}
	// Queued one by one so the batch order is known.
	queue("claim k1", func() (bool, error) { return s.ClaimEvent(ctx, "k1", nil, time.Time{}) })
	<-queued
	queue("duplicate turn", func() (bool, error) {
		return false, s.CreateTurn(ctx, echogate.TurnRecord{ID: "taken", Session: "s"})
	})
	<-queued
	queue("append", func() (bool, error) {
		return true, s.AppendMessages(ctx, "s", "t", []echogate.Message{{Role: echogate.RoleUser, Content: "a"}, {Role: echogate.RoleUser, Content: "b"}}, time.Time{})
	})
	<-queued
	cctx, cancel := context.WithCancel(ctx)
	queue("cancelled while queued", func() (bool, error) { return s.ClaimEvent(cctx, "k-cancelled", nil, time.Time{}) })
	<-queued
	queue("claim k1 again", func() (bool, error) { return s.ClaimEvent(ctx, "k1", nil, time.Time{}) })
	<-queued
	cancel()
	// The cancelled call leaves the queue logically at once (its slot is skipped later).
	var cancelled result
	for r := range results {
		if r.name == "cancelled while queued" {
			cancelled = r
			break
		}
		t.Fatalf("%s finished while the writer was held: %v", r.name, r.err)
	}
	if !errors.Is(cancelled.err, context.Canceled) {
		t.Errorf("call cancelled while queued = %v, want context.Canceled", cancelled.err)
	}
	release()
	wg.Wait()
	close(results)
	got := map[string]result{}
	for r := range results {
		got[r.name] = r
	}
	if r := got["claim k1"]; r.err != nil || !r.ok {
		t.Errorf("claim k1 = %v, %v; want true, nil", r.ok, r.err)
	}
	if r := got["duplicate turn"]; !errors.Is(r.err, ErrExists) {
		t.Errorf("duplicate CreateTurn = %v, want ErrExists", r.err)
	}
	if r := got["append"]; r.err != nil {
		t.Errorf("append in a batch with a failing call = %v, want nil", r.err)
	}
	if r := got["claim k1 again"]; r.err != nil || r.ok {
		t.Errorf("second claim of k1 in the same batch = %v, %v; want false, nil", r.ok, r.err)
	}
	if h, err := s.History(ctx, "s", 0); err != nil || len(h) != 2 {
		t.Errorf("History after the batch = %d, %v; want 2 messages committed", len(h), err)
	}
	if ok, err := s.ClaimEvent(ctx, "k-cancelled", nil, time.Time{}); err != nil || !ok {
		t.Errorf("ClaimEvent(k-cancelled) = %v, %v; want true (the cancelled claim wrote nothing)", ok, err)
	}
}

func TestCloseFailsQueuedWrites(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	release := holdWriter(t, s)
	queued := notifyQueued(s)
	errc := make(chan error, 1)
	go func() { errc <- s.GrantTool(ctx, "s", "tool", "u", time.Time{}) }()
	<-queued
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	release()
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
	// Queued before Close: it either ran before the writer stopped or failed with ErrClosed.
	if err := <-errc; err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("write queued during Close = %v, want nil or ErrClosed", err)
	}
	if err := s.GrantTool(ctx, "s", "tool", "u", time.Time{}); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close = %v, want ErrClosed", err)
	}
}

func TestMigrateHonoursCancellation(t *testing.T) {
	s := openTemp(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Migrate(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Migrate(cancelled) = %v, want context.Canceled", err)
	}
}
