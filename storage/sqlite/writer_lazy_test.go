package sqlite

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// unfinishedKeys reads the unfinished events straight from the event log, without
// UnfinishedEvents' commit of the completions written behind.
func unfinishedKeys(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.st.Load().ev.r.QueryContext(t.Context(), `SELECT key FROM events WHERE completed_at IS NULL ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

func claim(t *testing.T, s *Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if ok, err := s.ClaimEvent(t.Context(), k, []byte(`{}`), time.Now()); err != nil || !ok {
			t.Fatalf("ClaimEvent(%s) = %v, %v", k, ok, err)
		}
	}
}

// TestCompletionWrittenBehind: a completion queued behind commits with the event log's next
// write, in the same transaction, not in one of its own. (Its deadline is an hour here, so a
// slow machine cannot commit it alone first.)
func TestCompletionWrittenBehind(t *testing.T) {
	s := openTemp(t, Config{})
	d := s.st.Load()
	d.ev.wr.lazy.delay.Store(int64(time.Hour))
	claim(t, s, "web:a")
	holdEventWriter(t, s)() // the claim's batch is counted
	batches := d.ev.wr.stats.batches.Load()
	if err := s.completeBehind(d, "web:a", toMicros(time.Now())); err != nil {
		t.Fatal(err)
	}
	if got := unfinishedKeys(t, s); !slices.Equal(got, []string{"web:a"}) {
		t.Errorf("unfinished while the completion is held = %q, want [web:a]", got)
	}
	claim(t, s, "web:b") // commits the held completion with it
	if got := unfinishedKeys(t, s); !slices.Equal(got, []string{"web:b"}) {
		t.Errorf("unfinished after the next claim = %q, want [web:b]", got)
	}
	// The writer answers a batch's calls before it counts the batch: wait until it took its
	// next call (a solo one, not counted), which it does only after the counting.
	holdEventWriter(t, s)()
	if n := d.ev.wr.stats.batches.Load() - batches; n != 1 {
		t.Errorf("the claim and the held completion took %d transactions, want 1", n)
	}
}

// TestCompletionWrittenBehindAlone: with no write after it, a held completion commits on its
// own deadline (lazyDelay, 10 ms here).
func TestCompletionWrittenBehindAlone(t *testing.T) {
	s := openTemp(t, Config{})
	d := s.st.Load()
	d.ev.wr.lazy.delay.Store(int64(10 * time.Millisecond))
	claim(t, s, "web:a")
	done := make(chan struct{})
	hook := func() { close(done) }
	d.ev.wr.lazy.timedOut.Store(&hook)
	if err := s.completeBehind(d, "web:a", toMicros(time.Now())); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-t.Context().Done():
		t.Fatal("the held completion never committed on its own")
	}
	if got := unfinishedKeys(t, s); len(got) != 0 {
		t.Errorf("unfinished after the deadline = %q, want none", got)
	}
}

// TestCompletionWrittenBehindAtClose: Close commits what is held; UnfinishedEvents commits it
// before reading.
func TestCompletionWrittenBehindAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "echogate.db")
	s := openTemp(t, Config{Path: path})
	claim(t, s, "web:a", "web:b")
	d := s.st.Load()
	for _, k := range []string{"web:a", "web:b"} {
		if err := s.completeBehind(d, k, toMicros(time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.UnfinishedEvents(t.Context(), time.Now().Add(time.Hour), 0)
	if err != nil || len(evs) != 0 {
		t.Errorf("UnfinishedEvents after two completions written behind = %+v, %v; want none", evs, err)
	}
	claim(t, s, "web:c")
	if err := s.completeBehind(d, "web:c", toMicros(time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openTemp(t, Config{Path: path})
	if got := unfinishedKeys(t, again); len(got) != 0 {
		t.Errorf("unfinished after Close and reopening = %q, want none", got)
	}
	if err := again.completeBehind(again.st.Load(), "web:x", 0); err != nil {
		t.Fatal(err)
	}
	if err := again.Close(); err != nil { // an unknown event is logged, not fatal
		t.Fatal(err)
	}
	if err := again.completeBehind(d, "web:y", 0); err == nil {
		t.Error("completeBehind on a closed store = nil, want ErrClosed")
	}
}
