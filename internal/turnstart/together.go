package turnstart

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate"
)

// Reads are what a BatchWriter reads in the round trip of a turn's start writes, before them.
type Reads struct {
	Checkpoint bool                    // the session's newest checkpoint
	Since      *echogate.StoredMessage // the transcript entries after this one (nil: none read)
	SinceLimit int
}

// Read is what a BatchWriter read with a turn's start writes.
type Read struct {
	Checkpoint Checkpoint
	Since      HistoryRead
}

// HistoryRead is a HistorySince read with a turn's start writes: OK false when the anchor entry
// is gone or changed or more than the limit follow it; Err is the read's (or the batch's) error.
type HistoryRead struct {
	Entries []echogate.StoredMessage
	OK      bool
	Err     error
}

// Checkpoint is a session's newest checkpoint as read with a turn's start writes: Err wraps
// the store's ErrNotFound when the session has none, or is the batch's error.
type Checkpoint struct {
	Msg echogate.StoredMessage
	Err error
}

// BatchWriter is a store that writes a turn's record (and its input, if any) in one round trip
// (one transaction: both or neither), and reads what the turn's context needs in it when asked.
type BatchWriter interface {
	Writer
	// BeginWithInput writes rec and appends input under rec.ID at at, in one transaction, and
	// reads what reads asks for in the same round trip, before the writes.
	BeginWithInput(ctx context.Context, rec echogate.TurnRecord, input []echogate.Message, at time.Time, reads Reads) (Read, error)
}

// DeferredBatch begins a turn like Deferred, its record written with the reads b asks for in
// one round trip (w.BeginWithInput without input): the reads a turn's context needs anyway
// carry the record, and the input waits for the first of Durable, Flush after Progress, the
// delay, or Fold, so that in most turns it is appended with the answer in the end's write.
// Checkpoint and HistorySince wait for the batch. A failed batch fails the record
// (Recorded) and the reads.
func DeferredBatch(ctx context.Context, b Begin, w BatchWriter, delay time.Duration) *Start {
	if b.Now == nil {
		b.Now = time.Now
	}
	s := &Start{b: b, w: w, ctx: context.WithoutCancel(ctx), batched: true,
		recDone: make(chan struct{}), inputDone: make(chan struct{})}
	if len(b.Input) == 0 {
		s.inputAt = inputFolded // nothing to write
		close(s.inputDone)
	}
	go s.writeBatch(w)
	s.mu.Lock()
	if s.inputAt == inputPending {
		s.timer = time.AfterFunc(delay, func() { s.issue(false) })
	}
	s.mu.Unlock()
	return s
}

// writeBatch writes the record and the reads in one BeginWithInput call, without the input.
func (s *Start) writeBatch(w BatchWriter) {
	b := s.b
	wctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	rd, err := w.BeginWithInput(wctx, b.Record, nil, b.Now(), Reads{Checkpoint: b.ReadCheckpoint, Since: b.ReadSince, SinceLimit: b.SinceLimit})
	if err != nil {
		s.recErr = fmt.Errorf("begin turn: %w", err)
		rd.Checkpoint.Err, rd.Since = s.recErr, HistoryRead{Err: s.recErr}
		s.fail(s.recErr)
	}
	s.read = &rd
	close(s.recDone)
}

// Checkpoint returns the session's newest checkpoint as read with the start writes
// (Begin.ReadCheckpoint), once they landed (ctx's error if it ends first). ok is false when the
// start does not read it (a nil Start, a store that writes separately, not asked): the caller
// reads it itself.
func (s *Start) Checkpoint(ctx context.Context) (cp Checkpoint, ok bool) {
	if s == nil || !s.batched || !s.b.ReadCheckpoint {
		return Checkpoint{}, false
	}
	select {
	case <-s.recDone:
		return s.read.Checkpoint, true
	case <-ctx.Done():
		return Checkpoint{Err: ctx.Err()}, true
	}
}

// HistorySince returns the session's transcript entries after `after` as read with the start
// writes (Begin.ReadSince), once they landed (ctx's error if it ends first). ok is false when
// the start did not read them, or read them after another entry: the caller reads them itself.
func (s *Start) HistorySince(ctx context.Context, after echogate.StoredMessage) (h HistoryRead, ok bool) {
	if s == nil || !s.batched || s.b.ReadSince == nil {
		return HistoryRead{}, false
	}
	if a := s.b.ReadSince; a.Seq != after.Seq || a.Turn != after.Turn || !a.At.Equal(after.At) {
		return HistoryRead{}, false
	}
	select {
	case <-s.recDone:
		return s.read.Since, true
	case <-ctx.Done():
		return HistoryRead{Err: ctx.Err()}, true
	}
}
