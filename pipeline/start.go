package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// startWriteDelay is how long a turn runs before the user's message is written if nothing
// needed it earlier: the question of a long turn is in the transcript within this time.
const startWriteDelay = 2 * time.Second

// turnWrites are a turn's start writes: its record (begin, in the turn log) and its input
// messages. Neither is read by the ContextStage or the model call, so neither holds them up;
// everything that needs them durable (a tool run, the post of the answer, the turn's end)
// waits for them with started.
type turnWrites struct {
	startDone chan struct{}
	startErr  error
	// The input messages are issued at most once (inputAt leaves inputPending under mu), or
	// folded into the ResponseStage's append; progress (the model asked for a tool) makes the
	// write that issues them carry the usage buffered so far.
	mu        sync.Mutex
	inputAt   inputState
	progress  bool
	inputDone chan struct{}
	inputErr  error
	timer     *time.Timer
	input     []echogate.Message
	stop      context.CancelCauseFunc
	ctx       context.Context
}

// inputState is where the write of a turn's input messages is.
type inputState uint8

const (
	inputPending inputState = iota // not issued yet
	inputIssued                    // written, or being written, by issueInput
	inputFolded                    // taken over by the ResponseStage's append (foldInput)
)

// startTurn writes the turn's record (status running) in the background, and arranges the
// write of its input messages. The input messages are written behind:
//   - when a tool is about to run (the model asked for one; a file tool reads the transcript),
//   - when the turn has run for startWriteDelay,
//   - or, in most turns, by the ResponseStage: the question is appended together with the
//     answer, in the round trip that records the turn's end anyway.
//
// With a store shared by replicas (a SessionLocker) both are written at once and the model is
// called only once they landed: another replica that takes the event over after this process
// died finds the running turn, closes it and knows whether the question was saved. A failed
// write stops the turn with the error as its cause, and the ResponseStage fails it.
//
// The record is also the write-ahead of the post: its id is the reply id the answer is posted
// under, and the answer is posted only after it is durable (see ResponseStage).
//
// begin issues the record's write and tells done its outcome, exactly once, perhaps before it
// returns (see beginTurn); done does not block.
func (t *Turn) startTurn(ctx context.Context, stop context.CancelCauseFunc, begin func(context.Context, func(error)), input []echogate.Message) {
	w := &t.w
	w.startDone, w.inputDone = make(chan struct{}), make(chan struct{})
	w.input, w.stop = input, stop
	w.ctx = context.WithoutCancel(ctx)
	wctx, cancel := context.WithTimeout(w.ctx, stageTimeout)
	begin(wctx, func(err error) {
		cancel()
		if err != nil {
			err = fmt.Errorf("pipeline: begin turn: %w", err)
		}
		w.startErr = err
		close(w.startDone)
		if err != nil {
			stop(err)
		}
	})
	if len(input) == 0 {
		w.inputAt = inputFolded // nothing to write
		close(w.inputDone)
		return
	}
	w.timer = time.AfterFunc(startWriteDelay, t.writeInput)
	if t.p.replicas {
		go t.writeInput()
	}
}

// writeInput writes the input messages, with the usage buffered so far once the model asked
// for a tool, unless they were issued or folded already. It blocks until that write ended.
func (t *Turn) writeInput() { t.issueInput(false) }

// writeProgress is what a turn does when the model asks for a tool: its input messages and
// the usage buffered so far are due together, in one RecordProgress (one commit), written by
// the first that needs them: the tool run (started), the next model call (flushProgress),
// the delay's timer, or, when nothing ran, the turn's end, which writes both anyway. It
// issues no write itself: the tool run, which must wait for the write, issues it on its own
// goroutine and waits for it there, without a goroutine of the write's and two handoffs.
// When the input messages were issued already (a later tool call of the turn), the usage
// goes to the ledger now (flushUsageAsync), awaited by the turn's end (inFlight).
func (t *Turn) writeProgress() {
	w := &t.w
	if w.inputDone == nil {
		t.flushUsageAsync()
		return
	}
	w.mu.Lock()
	pending := w.inputAt == inputPending
	if pending {
		w.progress = true
	}
	w.mu.Unlock()
	if !pending {
		t.flushUsageAsync()
	}
}

// flushProgress writes the input messages and the usage when the model asked for a tool that
// did not run (denied, unknown, the plan): the next model call's budget check must see the
// spend, and the turn goes on. Without such a request it writes nothing.
func (t *Turn) flushProgress() { t.issueInput(true) }

// issueInput writes the input messages, with the usage buffered so far when the model asked
// for a tool, unless they were issued or folded already, or (onlyProgress) unless the model
// asked for one. It blocks for the write, on the caller's goroutine; whoever else needs the
// write waits for inputDone.
func (t *Turn) issueInput(onlyProgress bool) {
	w := &t.w
	if w.inputDone == nil {
		return
	}
	w.mu.Lock()
	if w.inputAt != inputPending || (onlyProgress && !w.progress) {
		w.mu.Unlock()
		return
	}
	w.inputAt = inputIssued
	withUsage := w.progress
	var usage []echogate.UsageRecord
	if withUsage {
		usage = t.usage.take()
		t.usage.inFlight.Add(1)
		defer t.usage.inFlight.Done()
	}
	w.mu.Unlock()
	w.timer.Stop()
	wctx, cancel := context.WithTimeout(w.ctx, stageTimeout)
	defer cancel()
	err := t.saveInput(wctx, withUsage, usage)
	w.inputErr = err
	close(w.inputDone)
	if err != nil {
		w.stop(err)
		return
	}
	for _, u := range usage {
		t.observeUsage(u)
	}
}

// saveInput writes the input messages, with usage in the same transaction when withUsage.
// When that write fails, usage goes back to the turn's buffer.
func (t *Turn) saveInput(ctx context.Context, withUsage bool, usage []echogate.UsageRecord) error {
	key, now := t.key, t.p.cfg.Now()
	if !withUsage {
		if err := t.p.d.Store.AppendMessages(ctx, key, t.id, t.w.input, now); err != nil {
			return fmt.Errorf("pipeline: save user message: %w", err)
		}
		return nil
	}
	if err := t.p.d.Store.RecordProgress(ctx, key, t.id, t.w.input, usage, now); err != nil {
		t.usage.putBack(usage)
		return fmt.Errorf("pipeline: save user message and usage: %w", err)
	}
	return nil
}

// foldInput takes the write of the input messages over for the ResponseStage when it was not
// issued yet: it returns them, to be appended before the answer. It returns nil when they
// were written (or are being written) already.
func (t *Turn) foldInput() []echogate.Message {
	w := &t.w
	if w.inputDone == nil {
		return nil
	}
	w.mu.Lock()
	folded := w.inputAt == inputPending
	if folded {
		w.inputAt = inputFolded
	}
	w.mu.Unlock()
	if !folded {
		return nil
	}
	w.timer.Stop()
	close(w.inputDone)
	return w.input
}

// started writes the input messages if nobody did (see issueInput), waits for the start
// writes and returns their error, or ctx's. A write it issues itself it waits for, whatever
// ctx does (the write is bounded by stageTimeout; the ResponseStage waits for it anyway).
func (t *Turn) started(ctx context.Context) error {
	w := &t.w
	if w.startDone == nil {
		return nil
	}
	t.writeInput()
	for _, done := range []chan struct{}{w.startDone, w.inputDone} {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(w.startErr, w.inputErr)
}

// beginTurn returns the write of rec for startTurn: the store's StartTurn when it queues
// writes to a goroutine of its own (TurnStarter), else CreateTurn on a goroutine of the turn's.
func (p *Pipeline) beginTurn(rec echogate.TurnRecord) func(context.Context, func(error)) {
	if s, ok := p.d.Store.(TurnStarter); ok {
		return func(ctx context.Context, done func(error)) { s.StartTurn(ctx, rec, done) }
	}
	return func(ctx context.Context, done func(error)) {
		go func() { done(p.d.Store.CreateTurn(ctx, rec)) }()
	}
}
