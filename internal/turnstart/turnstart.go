// Package turnstart orders the writes that start a turn: its record (status running) and its
// input messages. The order is the store's choice, made in its TurnLog.BeginTurn:
//
//   - Deferred (the single-process stores: SQLite, the in-memory test store): the record is
//     written while the turn's context is built and the model runs; the input waits, so that in
//     most turns it is appended with the answer, in the round trip that writes the turn's end
//     anyway (Fold). It is written earlier when something needs it durable (Durable: a tool is
//     about to run, the answer is about to be posted), or once the turn has run for the delay.
//   - DeferredBatch (PostgreSQL, shared by replicas): the same, with the record written in the
//     round trip of the reads the turn's context needs (BatchWriter), so it costs no round trip
//     of its own. A replica that takes the event over after this process died finds the running
//     turn and whether the question was saved, as a restarted process does.
//
// The pipeline uses one path whatever the order: Durable before an effect that needs the start
// written, Progress when the model asks for a tool, Flush before the next model call, Fold at the
// turn's end.
package turnstart

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// DefaultDelay is how long a Deferred turn runs before its input is written if nothing needed
// it earlier: the question of a long turn is in the transcript within this time.
const DefaultDelay = 2 * time.Second

// writeTimeout bounds each start write. The writes run on the turn's context without its
// cancellation: a stopped turn still records its start, which its end updates.
const writeTimeout = 30 * time.Second

// Begin is what a turn's start writes, and how the turn hears of them.
type Begin struct {
	Record echogate.TurnRecord
	// Input is the turn's input messages, appended under Record.ID; none for a turn whose
	// input is in the transcript already (a replay).
	Input []echogate.Message
	// Now stamps the input's write (time.Now when nil).
	Now func() time.Time
	// Owner is the turn the start reports to; nil: nobody is told, and no usage travels.
	Owner Owner
	// ReadCheckpoint asks for the session's newest checkpoint to be read with the start writes
	// when the store writes them together (BatchWriter): Start.Checkpoint returns it. A store
	// that cannot leaves the read to the caller.
	ReadCheckpoint bool
	// ReadSince asks, likewise, for the session's transcript entries after this one (as
	// HistorySince reads them, at most SinceLimit): Start.HistorySince returns them.
	ReadSince  *echogate.StoredMessage
	SinceLimit int
}

// Owner is the turn a Start reports to. Its methods may be called on a store's goroutine and
// must not block.
type Owner interface {
	// StartFailed is told the first start write that failed, once: the turn stops with it.
	StartFailed(error)
	// DueUsage takes the ledger entries due with the input once the model asked for a tool
	// (Progress); they are written with it in one transaction.
	DueUsage() []echogate.UsageRecord
	// UsageWritten is told the outcome of that write (on failure the entries are the
	// owner's again), before the input counts as written.
	UsageWritten([]echogate.UsageRecord, error)
}

// Writer is the store calls a Start issues.
type Writer interface {
	// StartTurn writes rec and tells done its outcome exactly once, perhaps before it returns;
	// done must not block. Blocking adapts a store whose CreateTurn waits for the write.
	StartTurn(ctx context.Context, rec echogate.TurnRecord, done func(error))
	// AppendMessages appends msgs to the session's transcript under turn.
	AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error
	// RecordProgress appends msgs and records usage in one transaction.
	RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error
}

// CreateWriter is a store whose CreateTurn blocks until the record is written.
type CreateWriter interface {
	CreateTurn(ctx context.Context, rec echogate.TurnRecord) error
	AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error
	RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error
}

// Blocking is the Writer of a store whose CreateTurn blocks: StartTurn runs it on a goroutine
// of its own and reports its outcome.
func Blocking(s CreateWriter) Writer { return blocking{s} }

type blocking struct{ CreateWriter }

func (b blocking) StartTurn(ctx context.Context, rec echogate.TurnRecord, done func(error)) {
	go func() { done(b.CreateTurn(ctx, rec)) }()
}

// Start is one turn's start writes. Its methods are safe for concurrent use and on a nil
// *Start (a turn with nothing to write: a resumed turn, whose record its decision wrote).
type Start struct {
	b   Begin
	w   Writer
	ctx context.Context

	recDone chan struct{}
	recErr  error
	batched bool  // DeferredBatch: one BatchWriter call writes the record with the reads
	read    *Read // what it read with them (Begin.ReadCheckpoint, ReadSince); set before recDone closes

	// The input is issued at most once (inputAt leaves pending under mu) or folded into the
	// turn's end; progress (the model asked for a tool) makes the write that issues it carry
	// the usage taken then.
	mu        sync.Mutex
	inputAt   inputState
	progress  bool
	inputDone chan struct{}
	inputErr  error
	timer     *time.Timer
	failOnce  sync.Once
}

// inputState is where the write of a turn's input messages is.
type inputState uint8

const (
	inputPending inputState = iota // not issued yet
	inputIssued                    // written, or being written
	inputFolded                    // taken over by the turn's end (Fold), or nothing to write
)

// Deferred begins a turn whose input waits for the first of: Durable, Flush after Progress,
// the delay, or Fold. It returns at once; the record's write is issued before it returns.
func Deferred(ctx context.Context, b Begin, w Writer, delay time.Duration) *Start {
	s := begin(ctx, b, w)
	s.mu.Lock()
	if s.inputAt == inputPending {
		s.timer = time.AfterFunc(delay, func() { s.issue(false) })
	}
	s.mu.Unlock()
	return s
}

func begin(ctx context.Context, b Begin, w Writer) *Start {
	if b.Now == nil {
		b.Now = time.Now
	}
	s := &Start{b: b, w: w, ctx: context.WithoutCancel(ctx), recDone: make(chan struct{}), inputDone: make(chan struct{})}
	if len(b.Input) == 0 {
		s.inputAt = inputFolded // nothing to write
		close(s.inputDone)
	}
	wctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	w.StartTurn(wctx, b.Record, func(err error) {
		cancel()
		if err != nil {
			err = fmt.Errorf("begin turn: %w", err)
			s.fail(err)
		}
		s.recErr = err
		close(s.recDone)
	})
	return s
}

func (s *Start) fail(err error) {
	if s.b.Owner != nil {
		s.failOnce.Do(func() { s.b.Owner.StartFailed(err) })
	}
}

// Recorded waits until the turn's record is durable and returns its write's error, or ctx's.
func (s *Start) Recorded(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case <-s.recDone:
		return s.recErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Durable issues the input's write unless it was issued or folded, and waits until the record
// and the input are durable; it returns their error, or ctx's. A write it issues itself it
// waits for whatever ctx does (the write is bounded on its own).
func (s *Start) Durable(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.issue(false)
	return s.wait(ctx)
}

func (s *Start) wait(ctx context.Context) error {
	for _, done := range []chan struct{}{s.recDone, s.inputDone} {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(s.recErr, s.inputErr)
}

// Progress tells the start that the model asked for a tool: the input, when not issued yet, is
// written together with the usage due (Begin.Usage) by whichever needs it first (Durable,
// Flush, the delay, or the turn's end, which writes both anyway). It issues nothing itself.
// It reports false when the input was issued or folded already: the caller records the usage
// itself.
func (s *Start) Progress() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inputAt != inputPending {
		return false
	}
	s.progress = true
	return true
}

// Flush writes the input with the usage due when the model asked for a tool (Progress) and
// they were not issued yet; else it writes nothing. It blocks for the write.
func (s *Start) Flush() {
	if s != nil {
		s.issue(true)
	}
}

// Fold takes the input's write over for the turn's end when it was not issued yet: it returns
// the input, to be appended before the answer, and the start never writes it. It returns nil
// when the input was written (or is being written) already.
func (s *Start) Fold() []echogate.Message {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	folded := s.inputAt == inputPending
	if folded {
		s.inputAt = inputFolded
		s.stopTimer()
	}
	s.mu.Unlock()
	if !folded {
		return nil
	}
	close(s.inputDone)
	return s.b.Input
}

// stopTimer stops the delay's timer; s.mu is held.
func (s *Start) stopTimer() {
	if s.timer != nil {
		s.timer.Stop()
	}
}

// issue writes the input, with the usage due when the model asked for a tool, unless it was
// issued or folded already, or (onlyProgress) unless the model asked for one. It blocks for
// the write on the caller's goroutine; whoever else needs it waits for inputDone.
func (s *Start) issue(onlyProgress bool) {
	s.mu.Lock()
	if s.inputAt != inputPending || (onlyProgress && !s.progress) {
		s.mu.Unlock()
		return
	}
	s.inputAt = inputIssued
	withUsage := s.progress && s.b.Owner != nil
	var usage []echogate.UsageRecord
	if withUsage {
		usage = s.b.Owner.DueUsage()
	}
	s.stopTimer()
	s.mu.Unlock()
	wctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	rec := s.b.Record
	var err error
	if withUsage {
		if err = s.w.RecordProgress(wctx, rec.Session, rec.ID, s.b.Input, usage, s.b.Now()); err != nil {
			err = fmt.Errorf("save user message and usage: %w", err)
		}
	} else if err = s.w.AppendMessages(wctx, rec.Session, rec.ID, s.b.Input, s.b.Now()); err != nil {
		err = fmt.Errorf("save user message: %w", err)
	}
	s.inputErr = err
	if withUsage {
		s.b.Owner.UsageWritten(usage, err) // before inputDone: a failed write's usage is the end's to record
	}
	close(s.inputDone)
	if err != nil {
		s.fail(err)
	}
}
