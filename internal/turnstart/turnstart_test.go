package turnstart

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// fakeWrites records the start writes; append blocks until release is closed (when set).
type fakeWrites struct {
	release  chan struct{}
	appended chan []echogate.Message
	progress chan []echogate.UsageRecord
	recErr   error
}

func (f *fakeWrites) StartTurn(_ context.Context, _ echogate.TurnRecord, done func(error)) {
	done(f.recErr)
}

func (f *fakeWrites) AppendMessages(ctx context.Context, _ echogate.SessionKey, _ string, msgs []echogate.Message, _ time.Time) error {
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.appended <- msgs
	return nil
}

func (f *fakeWrites) RecordProgress(_ context.Context, _ echogate.SessionKey, _ string, msgs []echogate.Message, usage []echogate.UsageRecord, _ time.Time) error {
	f.appended <- msgs
	f.progress <- usage
	return nil
}

func newFake() *fakeWrites {
	return &fakeWrites{appended: make(chan []echogate.Message, 4), progress: make(chan []echogate.UsageRecord, 4)}
}

var qBegin = Begin{Record: echogate.TurnRecord{ID: "t1", Session: "web:s"}, Input: []echogate.Message{{Role: echogate.RoleUser, Content: "q"}}}

// A deferred input nobody needed is written once the delay passed.
func TestDeferredWritesTheInputAfterTheDelay(t *testing.T) {
	f := newFake()
	s := Deferred(t.Context(), qBegin, f, time.Millisecond)
	if got := <-f.appended; len(got) != 1 || got[0].Content != "q" {
		t.Errorf("written after the delay: %+v, want the question", got)
	}
	if err := s.Durable(t.Context()); err != nil {
		t.Errorf("Durable = %v, want nil", err)
	}
	if f := s.Fold(); f != nil {
		t.Errorf("Fold after the delay's write = %+v, want nil", f)
	}
}

// Progress then Flush writes the input with the usage taken at that moment, in one write; a
// failed record is told to Failed once and returned by Durable.
func TestProgressAndFailure(t *testing.T) {
	f := newFake()
	due := []echogate.UsageRecord{{Turn: "t1"}}
	o := &testOwner{due: due}
	b := qBegin
	b.Owner = o
	s := Deferred(t.Context(), b, f, time.Hour)
	s.Flush() // no Progress: nothing written
	if !s.Progress() {
		t.Fatal("Progress before any write = false, want true (held)")
	}
	s.Flush()
	if got := <-f.progress; len(got) != 1 || len(o.told) != 1 {
		t.Errorf("Flush after Progress wrote usage %+v (told %+v), want the entry due, once", got, o.told)
	}
	if s.Progress() {
		t.Error("Progress after the input was written = true, want false (the caller writes the usage)")
	}

	f = newFake()
	f.recErr = errors.New("disk full")
	o = &testOwner{}
	b = qBegin
	b.Owner = o
	s = Deferred(t.Context(), b, f, time.Hour)
	if err := s.Durable(t.Context()); err == nil || o.failed != 1 {
		t.Errorf("Durable = %v with StartFailed told %d times, want the record's error, told once", err, o.failed)
	}
}

// A nil Start (a resumed turn, nothing to write) waits for nothing.
func TestNilStart(t *testing.T) {
	var s *Start
	if _, ok := s.Checkpoint(t.Context()); ok {
		t.Error("Checkpoint of a nil Start: ok, want the caller to read it")
	}
	if s.Durable(t.Context()) != nil || s.Recorded(t.Context()) != nil || s.Progress() || s.Fold() != nil {
		t.Error("a nil Start reported something, want nothing to wait for")
	}
	s.Flush()
}

// testOwner records what a Start told it (the tests call from one goroutine at a time).
type testOwner struct {
	due    []echogate.UsageRecord
	told   []echogate.UsageRecord
	failed int
}

func (o *testOwner) StartFailed(error)                              { o.failed++ }
func (o *testOwner) DueUsage() []echogate.UsageRecord               { return o.due }
func (o *testOwner) UsageWritten(u []echogate.UsageRecord, _ error) { o.told = u }

// recordBatch is a BatchWriter for DeferredBatch: BeginWithInput writes the record alone (no
// input) with the reads; the input goes through AppendMessages or RecordProgress later.
type recordBatch struct {
	*fakeWrites
	t      *testing.T
	calls  chan []echogate.Message
	reads  chan Reads
	err    error
	starts int
}

func (b *recordBatch) StartTurn(context.Context, echogate.TurnRecord, func(error)) {
	b.t.Error("StartTurn called, want the record written by BeginWithInput")
}

func (b *recordBatch) BeginWithInput(_ context.Context, _ echogate.TurnRecord, input []echogate.Message, _ time.Time, reads Reads) (Read, error) {
	b.calls <- input
	b.reads <- reads
	return Read{Checkpoint: Checkpoint{Msg: echogate.StoredMessage{Seq: 7}}, Since: HistoryRead{Entries: []echogate.StoredMessage{{Seq: 4}}, OK: true}}, b.err
}

func newRecordBatch(t *testing.T, err error) *recordBatch {
	return &recordBatch{fakeWrites: newFake(), t: t, calls: make(chan []echogate.Message, 2), reads: make(chan Reads, 2), err: err}
}

// DeferredBatch writes the record with the reads in one BeginWithInput call and no input; the
// input waits as Deferred's does: the turn's end takes it over (Fold), or Durable, Flush after
// Progress or the delay writes it; the reads wait for the batch.
func TestDeferredBatchWritesTheRecordWithTheReadsAndDefersTheInput(t *testing.T) {
	b := qBegin
	b.ReadCheckpoint, b.ReadSince, b.SinceLimit = true, &echogate.StoredMessage{Seq: 3}, 9
	t.Run("Folded", func(t *testing.T) {
		w := newRecordBatch(t, nil)
		s := DeferredBatch(t.Context(), b, w, time.Hour)
		if got := <-w.calls; len(got) != 0 {
			t.Errorf("BeginWithInput input = %+v, want none (the input waits)", got)
		}
		if r := <-w.reads; !r.Checkpoint || r.Since == nil || r.Since.Seq != 3 || r.SinceLimit != 9 {
			t.Errorf("BeginWithInput reads = %+v, want the checkpoint and the entries after seq 3 (limit 9)", r)
		}
		if cp, ok := s.Checkpoint(t.Context()); !ok || cp.Err != nil || cp.Msg.Seq != 7 {
			t.Errorf("Checkpoint = %+v, %v, want the one read with the record (seq 7)", cp, ok)
		}
		if h, ok := s.HistorySince(t.Context(), echogate.StoredMessage{Seq: 3}); !ok || h.Err != nil || !h.OK || len(h.Entries) != 1 {
			t.Errorf("HistorySince(seq 3) = %+v, %v, want the entries read with the record", h, ok)
		}
		if got := s.Fold(); len(got) != 1 || got[0].Content != "q" {
			t.Errorf("Fold = %+v, want the input, taken over by the turn's end", got)
		}
		if err := s.Durable(t.Context()); err != nil {
			t.Errorf("Durable after Fold = %v, want nil (the record is written)", err)
		}
		select {
		case got := <-w.appended:
			t.Errorf("input appended %+v, want it folded into the end", got)
		default:
		}
	})
	t.Run("Durable", func(t *testing.T) {
		w := newRecordBatch(t, nil)
		s := DeferredBatch(t.Context(), b, w, time.Hour)
		if err := s.Durable(t.Context()); err != nil {
			t.Fatalf("Durable = %v, want nil", err)
		}
		if got := <-w.appended; len(got) != 1 || got[0].Content != "q" {
			t.Errorf("Durable wrote %+v, want the question", got)
		}
		if s.Fold() != nil {
			t.Error("Fold after Durable returned the input, want nil (written)")
		}
	})
	t.Run("Delay", func(t *testing.T) {
		w := newRecordBatch(t, nil)
		_ = DeferredBatch(t.Context(), b, w, time.Millisecond)
		if got := <-w.appended; len(got) != 1 || got[0].Content != "q" {
			t.Errorf("written after the delay: %+v, want the question", got)
		}
	})
	t.Run("Failed", func(t *testing.T) {
		w := newRecordBatch(t, errors.New("unique violation"))
		o := &testOwner{}
		fb := b
		fb.Owner = o
		s := DeferredBatch(t.Context(), fb, w, time.Hour)
		if err := s.Recorded(t.Context()); err == nil {
			t.Error("Recorded = nil, want the batch's error")
		}
		if cp, ok := s.Checkpoint(t.Context()); !ok || cp.Err == nil {
			t.Errorf("Checkpoint = %+v, %v, want the batch's error", cp, ok)
		}
		if o.failed != 1 {
			t.Errorf("StartFailed told %d times, want 1", o.failed)
		}
	})
}
