package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// holdWriter occupies the writer goroutine with a solo call until release is called, so the
// calls queued meanwhile run as one batch. A test that stops early (t.Fatal) releases the
// writer in its cleanup, before the store is closed: Close waits for the writer, so a writer
// left held would turn the failure into a hang.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	return holdW(t, s.st.Load().wr)
}

// holdEventWriter is holdWriter for the event log's writer.
func holdEventWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	return holdW(t, s.st.Load().ev.wr)
}

func holdW(t *testing.T, wr *writer) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- wr.do(context.Background(), true, func(*wtx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open) // runs before openTemp's Close (cleanups run last-in first-out)
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("holding the writer: solo call returned %v before it ran", err)
	}
	return func() {
		open()
		if err := <-done; err != nil {
			t.Errorf("held solo call: %v", err)
		}
	}
}

// notifyQueued makes the writer report each call entering its queue on the returned channel.
// Calls already on their way to the queue when it is installed are not reported.
func notifyQueued(s *Store) <-chan struct{} { return notifyQueuedW(s.st.Load().wr) }

// notifyEventQueued is notifyQueued for the event log's writer.
func notifyEventQueued(s *Store) <-chan struct{} { return notifyQueuedW(s.st.Load().ev.wr) }

func notifyQueuedW(wr *writer) <-chan struct{} {
	ch := make(chan struct{}, 64)
	hook := func() { ch <- struct{}{} }
	wr.enqueued.Store(&hook)
	return ch
}

// answerWithin waits for a write call's result. The bound only turns a call that is never
// answered (a writer bug) into a failure instead of a hang; answers normally take milliseconds.
func answerWithin[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s: no answer within a minute (a queued write call was never answered)", what)
		panic("unreachable")
	}
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
	// waitQueued returns once the call just started is in the writer's queue; a call that
	// finishes instead (an error before queueing) fails the test rather than blocking it.
	waitQueued := func(name string) {
		t.Helper()
		select {
		case <-queued:
		case r := <-results:
			t.Fatalf("%s finished while the writer was held (waiting for %q to be queued): %v", r.name, name, r.err)
		}
	}
	// Queued one by one so the batch order is known.
	queue("grant a", func() (bool, error) { return true, s.GrantTool(ctx, "s", "u", "a", "u", time.Time{}) })
	waitQueued("grant a")
	queue("duplicate turn", func() (bool, error) {
		return false, s.CreateTurn(ctx, echogate.TurnRecord{ID: "taken", Session: "s"})
	})
	waitQueued("duplicate turn")
	queue("append", func() (bool, error) {
		return true, s.AppendMessages(ctx, "s", "t", []echogate.Message{{Role: echogate.RoleUser, Content: "a"}, {Role: echogate.RoleUser, Content: "b"}}, time.Time{})
	})
	waitQueued("append")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue("cancelled while queued", func() (bool, error) { return false, s.GrantTool(cctx, "s", "u", "cancelled", "u", time.Time{}) })
	waitQueued("cancelled while queued")
	queue("grant a again", func() (bool, error) { return true, s.GrantTool(ctx, "s", "u", "a", "v", time.Time{}) })
	waitQueued("grant a again")
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
	if r := got["grant a"]; r.err != nil {
		t.Errorf("grant a = %v, want nil", r.err)
	}
	if r := got["duplicate turn"]; !errors.Is(r.err, ErrExists) {
		t.Errorf("duplicate CreateTurn = %v, want ErrExists", r.err)
	}
	if r := got["append"]; r.err != nil {
		t.Errorf("append in a batch with a failing call = %v, want nil", r.err)
	}
	if r := got["grant a again"]; r.err != nil {
		t.Errorf("second grant of a in the same batch = %v, want nil (granting again keeps the first)", r.err)
	}
	if h, err := s.History(ctx, "s", 0); err != nil || len(h) != 2 {
		t.Errorf("History after the batch = %d, %v; want 2 messages committed", len(h), err)
	}
	if g, err := s.Grants(ctx, "s", "u"); err != nil || len(g) != 1 || g["a"] == "" {
		t.Errorf("Grants after the batch = %v, %v; want [a] (the cancelled grant wrote nothing)", g, err)
	}
	// The batch ran without savepoints first, met the failing call, and ran again with them.
	if st := s.WriteStats(); st.Retries != 1 {
		t.Errorf("WriteStats().Retries = %d, want 1 (one batch with a failing call)", st.Retries)
	}
}

// Claims go to the event log's own writer and are grouped there: two claims of one key in
// one batch give exactly one true, and a claim cancelled while queued writes nothing.
func TestEventLogGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	release := holdEventWriter(t, s)
	queued := notifyEventQueued(s)
	type result struct {
		ok  bool
		err error
	}
	first, again, cancelled := make(chan result, 1), make(chan result, 1), make(chan result, 1)
	go func() { ok, err := s.ClaimEvent(ctx, "k1", nil, time.Time{}); first <- result{ok, err} }()
	<-queued
	cctx, cancel := context.WithCancel(ctx)
	go func() { ok, err := s.ClaimEvent(cctx, "k-cancelled", nil, time.Time{}); cancelled <- result{ok, err} }()
	<-queued
	go func() { ok, err := s.ClaimEvent(ctx, "k1", nil, time.Time{}); again <- result{ok, err} }()
	<-queued
	// The main writer is free meanwhile: the transcript does not wait for the event log.
	if err := s.GrantTool(ctx, "s", "u", "a", "u", time.Time{}); err != nil {
		t.Fatalf("GrantTool while the event log's writer is busy = %v", err)
	}
	cancel()
	if r := answerWithin(t, "cancelled claim", cancelled); !errors.Is(r.err, context.Canceled) {
		t.Errorf("claim cancelled while queued = %v, %v; want context.Canceled", r.ok, r.err)
	}
	release()
	if r := answerWithin(t, "first claim", first); r.err != nil || !r.ok {
		t.Errorf("first claim = %v, %v; want true, nil", r.ok, r.err)
	}
	if r := answerWithin(t, "second claim", again); r.err != nil || r.ok {
		t.Errorf("second claim of k1 in the same batch = %v, %v; want false, nil", r.ok, r.err)
	}
	if ok, err := s.ClaimEvent(ctx, "k-cancelled", nil, time.Time{}); err != nil || !ok {
		t.Errorf("ClaimEvent(k-cancelled) = %v, %v; want true (the cancelled claim wrote nothing)", ok, err)
	}
}

// A batch whose calls all succeed commits in one go: no retry with savepoints.
func TestGroupCommitWithoutFailuresRunsOnce(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	release := holdWriter(t, s)
	queued := notifyQueued(s)
	errc := make(chan error, 3)
	for i := range 3 {
		go func() { errc <- s.GrantTool(ctx, "s", "u", fmt.Sprintf("tool%d", i), "u", time.Time{}) }()
		<-queued
	}
	before := s.WriteStats()
	release()
	for range 3 {
		if err := answerWithin(t, "grant", errc); err != nil {
			t.Fatal(err)
		}
	}
	// The writer answers a batch's calls before it counts the batch: wait until it took its
	// next call, which it does only after the counting.
	holdWriter(t, s)()
	st := s.WriteStats()
	if st.Retries != 0 || st.Batches-before.Batches != 1 || st.Calls-before.Calls != 3 {
		t.Errorf("WriteStats after one clean batch of 3 = %+v (before %+v); want 1 batch, 3 calls, no retry", st, before)
	}
}

// Checkpoints run in the background, and the writer restarts the log once it has grown past
// restartFrames, so the WAL file stays bounded under sustained writes.
func TestCheckpointsKeepWALBounded(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	const restartAt = 1024 // pages; the default would need a long test
	s.st.Load().cp.restartAt.Store(restartAt)
	body := strings.Repeat("x", 3000)
	const writers, perWriter = 8, 1000 // about 10k pages of transcript, more than restartFrames
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := echogate.SessionKey(fmt.Sprintf("s%d", (w*perWriter+i)%500))
				if err := s.AppendMessages(ctx, key, "t", []echogate.Message{{Role: echogate.RoleUser, Content: body}}, time.Time{}); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	// The background checkpointer reports the log's size at most every checkpointEvery; the
	// writer restarts the log at its next batch after a report past restartFrames.
	st := s.WriteStats()
	for deadline := time.Now().Add(10 * time.Second); st.Restarts == 0 && time.Now().Before(deadline); st = s.WriteStats() {
		time.Sleep(20 * time.Millisecond)
		if err := s.AppendMessages(ctx, "tick", "t", []echogate.Message{{Role: echogate.RoleUser, Content: "tick"}}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if st.Checkpoints == 0 {
		t.Errorf("WriteStats().Checkpoints = 0; want background checkpoints during %d writes", writers*perWriter)
	}
	if st.Restarts == 0 {
		t.Errorf("WriteStats().Restarts = 0; want the writer to restart the log after %d frames", restartAt)
	}
	fi, err := os.Stat(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The log restarts after restartAt pages plus what was committed since the last background
	// checkpoint reported it; SQLite's own auto-checkpoint bounds it at 2*restartFrames in any
	// case.
	if limit := int64(2*restartFrames) * (4096 + 24); fi.Size() > limit {
		t.Errorf("WAL file is %d bytes after %d writes; want at most %d (the log must restart)", fi.Size(), writers*perWriter, limit)
	}
	t.Logf("WAL %d bytes; %+v", fi.Size(), st)
}

func TestCloseFailsQueuedWrites(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	release := holdWriter(t, s)
	queued := notifyQueued(s)
	errc := make(chan error, 1)
	go func() { errc <- s.GrantTool(ctx, "s", "u", "tool", "u", time.Time{}) }()
	select {
	case <-queued:
	case err := <-errc:
		t.Fatalf("GrantTool returned %v while the writer was held, want it queued", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	release()
	if err := answerWithin(t, "Close", closed); err != nil {
		t.Errorf("Close = %v", err)
	}
	// Queued before Close: it either ran before the writer stopped or failed with ErrClosed.
	if err := answerWithin(t, "write queued during Close", errc); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("write queued during Close = %v, want nil or ErrClosed", err)
	}
	if err := s.GrantTool(ctx, "s", "u", "tool", "u", time.Time{}); !errors.Is(err, ErrClosed) {
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

// A call that breaks the shared transaction (here by ending it itself, standing in for SQLite
// rolling it back on an I/O error or a full disk) fails the whole batch. The calls queued behind
// it in the batch never ran: they must be answered too, not left waiting for ever.
func TestBrokenBatchAnswersEveryCall(t *testing.T) {
	for name, breaker := range map[string]func(tx *wtx) error{
		// RELEASE of the call's savepoint fails: the transaction is gone.
		"call succeeds after ending the transaction": func(tx *wtx) error {
			_, err := tx.exec("ROLLBACK")
			return err
		},
		// ROLLBACK TO the call's savepoint fails: the transaction is gone.
		"call fails after ending the transaction": func(tx *wtx) error {
			if _, err := tx.exec("ROLLBACK"); err != nil {
				return err
			}
			return errors.New("the call's own error")
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := openTemp(t, Config{})
			wr := s.st.Load().wr
			release := holdWriter(t, s)
			queued := notifyQueued(s)

			first := make(chan error, 1)
			go func() { first <- wr.do(ctx, false, breaker) }()
			<-queued
			behind := make(chan error, 2)
			go func() { behind <- s.GrantTool(ctx, "s", "u", "tool-a", "u", time.Time{}) }()
			<-queued
			go func() { behind <- s.GrantTool(ctx, "s", "u", "tool-b", "u", time.Time{}) }()
			<-queued
			release()

			if err := answerWithin(t, "the breaking call", first); err == nil {
				t.Errorf("breaking call = nil, want the batch's failure")
			}
			for range 2 {
				err := answerWithin(t, "a call queued behind the breaking one", behind)
				if err == nil || !strings.Contains(err.Error(), "not run") {
					t.Errorf("call queued behind a broken transaction = %v, want a \"not run\" error", err)
				}
			}
			if g, err := s.Grants(ctx, "s", "u"); err != nil || len(g) != 0 {
				t.Errorf("Grants after the broken batch = %v, %v; want none written", g, err)
			}
			// The writer recovered: the next transaction works.
			if err := s.GrantTool(ctx, "s", "u", "tool-a", "u", time.Time{}); err != nil {
				t.Fatalf("GrantTool after the broken batch = %v, want nil", err)
			}
			if g, err := s.Grants(ctx, "s", "u"); err != nil || len(g) != 1 {
				t.Errorf("Grants after a good write = %v, %v; want one", g, err)
			}
		})
	}
}

// After a burst of writes, an idle store empties its WAL file.
func TestIdleStoreTruncatesWAL(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	cp := s.st.Load().cp
	cp.idleAfter.Store(int64(50 * time.Millisecond))
	body := strings.Repeat("x", 3000)
	for i := range 200 {
		if err := s.AppendMessages(ctx, echogate.SessionKey(fmt.Sprintf("s%d", i%20)), "t", []echogate.Message{{Role: echogate.RoleUser, Content: body}}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); cp.truncates.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if cp.truncates.Load() == 0 {
		t.Fatal("no idle truncation within 10s of the last write")
	}
	fi, err := os.Stat(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 {
		t.Errorf("WAL file is %d bytes after the idle truncation, want 0", fi.Size())
	}
	// Writing again works and is read back.
	if err := s.AppendMessages(ctx, "after", "t", []echogate.Message{{Role: echogate.RoleUser, Content: "again"}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if h, err := s.History(ctx, "after", 10); err != nil || len(h) != 1 {
		t.Errorf("History after truncation = %d messages, %v", len(h), err)
	}
}

// A StartTurn whose ctx ends while it is queued is dropped: done is told ctx's error and the
// record is not written.
func TestStartTurnCancelledWhileQueued(t *testing.T) {
	s := openTemp(t, Config{})
	release := holdWriter(t, s)
	queued := notifyQueued(s)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 2)
	s.StartTurn(ctx, echogate.TurnRecord{ID: "t1", Session: "web:s", Status: echogate.TurnRunning}, func(err error) { got <- err })
	answerWithin(t, "StartTurn queued", queued)
	cancel()
	release()
	if err := answerWithin(t, "StartTurn", got); !errors.Is(err, context.Canceled) {
		t.Errorf("StartTurn cancelled while queued = %v, want context.Canceled", err)
	}
	if _, err := s.GetTurn(context.Background(), "t1"); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetTurn = %v, want not found: a dropped call writes nothing", err)
	}
	if err := s.st.Load().wr.sync(context.Background()); err != nil { // every call queued before has ended
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Errorf("done told a second time (%v)", err)
	default:
	}
}

// Starts racing Close are each told exactly once: committed, or ErrClosed (nothing is left
// waiting on a call the writer's drain missed).
func TestStartTurnRacingCloseToldOnce(t *testing.T) {
	s, err := New(Config{Path: t.TempDir() + "/x.db"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var started, told, closedErrs atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("t%d-%d", g, i)
				var once atomic.Int32
				ended := make(chan error, 1)
				started.Add(1)
				s.StartTurn(ctx, echogate.TurnRecord{ID: id, Session: "web:s", Status: echogate.TurnRunning}, func(err error) {
					if once.Add(1) != 1 {
						t.Errorf("%s: done told twice (%v)", id, err)
					}
					told.Add(1)
					ended <- err
				})
				err := answerWithin(t, id, ended)
				if errors.Is(err, ErrClosed) {
					closedErrs.Add(1)
					return
				}
				if err != nil {
					t.Errorf("%s: %v", id, err)
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond) // let some starts commit before Close
	if err := s.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	wg.Wait()
	if started.Load() != told.Load() || closedErrs.Load() != 8 {
		t.Errorf("%d starts, %d told, %d ErrClosed; want every start told once and each goroutine stopped by ErrClosed", started.Load(), told.Load(), closedErrs.Load())
	}
}

// A call that reaches the writer's queue after the writer drained it (the caller took the
// writer before Close and queued after) is told ErrClosed before enqueueNotify returns: the
// send can win the race against the closed stop, and nobody would drain it.
func TestNotifyAfterShutdownToldAtOnce(t *testing.T) {
	s, err := New(Config{Path: t.TempDir() + "/x.db"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	wr := s.st.Load().wr
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // each send races the closed stop: about half win it
		var got []error
		wr.enqueueNotify(context.Background(), func(*wtx) error { return nil }, func(err error) { got = append(got, err) })
		if len(got) != 1 || !errors.Is(got[0], ErrClosed) {
			t.Fatalf("call %d after shutdown: told %v before enqueueNotify returned, want ErrClosed once", i, got)
		}
	}
}
