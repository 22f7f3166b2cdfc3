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
	// The input messages are issued at most once by inputOnce, or folded into the
	// ResponseStage's append.
	inputOnce sync.Once
	inputDone chan struct{}
	inputErr  error
	timer     *time.Timer
	input     []echogate.Message
	stop      context.CancelCauseFunc
	ctx       context.Context
}

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
func (t *Turn) startTurn(ctx context.Context, stop context.CancelCauseFunc, begin func(context.Context) error, input []echogate.Message) {
	w := &t.w
	w.startDone, w.inputDone = make(chan struct{}), make(chan struct{})
	w.input, w.stop = input, stop
	w.ctx = context.WithoutCancel(ctx)
	wctx, cancel := context.WithTimeout(w.ctx, stageTimeout)
	go func() {
		defer cancel()
		err := begin(wctx)
		if err != nil {
			err = fmt.Errorf("pipeline: begin turn: %w", err)
		}
		w.startErr = err
		close(w.startDone)
		if err != nil {
			stop(err)
		}
	}()
	if len(input) == 0 {
		w.inputOnce.Do(func() { close(w.inputDone) })
		return
	}
	w.timer = time.AfterFunc(startWriteDelay, t.writeInput)
	if t.p.replicas {
		t.writeInput()
	}
}

// writeInput issues the write of the input messages unless it was issued or folded already.
// It does not wait for it: see started.
func (t *Turn) writeInput() { t.issueInput(false) }

// writeProgress is what a turn writes when the model asks for a tool: the input messages,
// unless they were issued or folded already, together with the usage buffered so far, in one
// RecordProgress (one commit); else the usage alone (flushUsageAsync). Neither is awaited
// here: a tool run waits for the input (started), the turn's end for the usage (inFlight).
// When the write fails the usage goes back to the buffer, for the end to record, before the
// input's failure is reported (started returns only after that).
func (t *Turn) writeProgress() {
	if !t.issueInput(true) {
		t.flushUsageAsync()
	}
}

// issueInput issues the write of the input messages, with the usage buffered so far when
// withUsage, unless it was issued or folded already, and reports whether it issued it.
func (t *Turn) issueInput(withUsage bool) (issued bool) {
	w := &t.w
	if w.inputDone == nil {
		return false
	}
	w.inputOnce.Do(func() {
		issued = true
		w.timer.Stop()
		var usage []echogate.UsageRecord
		if withUsage {
			usage = t.usage.take()
			t.usage.inFlight.Add(1)
		}
		wctx, cancel := context.WithTimeout(w.ctx, stageTimeout)
		go func() {
			defer cancel()
			if withUsage {
				defer t.usage.inFlight.Done()
			}
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
		}()
	})
	return issued
}

// saveInput writes the input messages, with usage in the same transaction when withUsage.
// When that write fails, usage goes back to the turn's buffer.
func (t *Turn) saveInput(ctx context.Context, withUsage bool, usage []echogate.UsageRecord) error {
	key, now := t.ev.SessionKey(), t.p.cfg.Now()
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
	folded := false
	w.inputOnce.Do(func() {
		w.timer.Stop()
		folded = true
		close(w.inputDone)
	})
	if !folded {
		return nil
	}
	return w.input
}

// started issues the input write if needed, waits for the start writes and returns their
// error, or ctx's.
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
