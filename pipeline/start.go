package pipeline

import (
	"context"
	"fmt"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
)

// beginTurn begins the turn in the turn log: its record (status running) and its input
// messages, written in the order the store chose (TurnLog.BeginTurn, internal/turnstart).
// The record is the write-ahead of the post: its id is the reply id the answer is posted under,
// and the answer is posted only after it is durable (see ResponseStage). A failed start write
// stops the turn with the error as its cause, and the ResponseStage fails it. A resumed turn's
// record was written with its decision (ResumeTurn): it begins nothing, and t.w stays nil.
// reads are what the start writes read in their round trip when the store writes them together
// (startReads; the ContextStage takes them from t.w).
func (t *Turn) beginTurn(ctx context.Context, input []echogate.Message, reads turnstart.Reads) {
	if t.approved != nil {
		return
	}
	t.input = input
	t.w = t.store.BeginTurn(ctx, turnstart.Begin{Record: t.rec, Input: input, Now: t.now, Owner: startOwner{t},
		ReadCheckpoint: reads.Checkpoint, ReadSince: reads.Since, SinceLimit: reads.SinceLimit})
}

// startReads are the ContextStage's store reads that t's start writes can carry on a store
// shared by replicas (the only one whose BeginTurn writes them together): a DM's checkpoint
// where loadCheckpoint would read it, and the transcript after the history cache's last entry
// of the session, which ContextStage.history reads with HistorySince whenever one is cached.
// None for a turn without input to write (the ContextStage reads for itself).
func (p *Pipeline) startReads(t *Turn, input []echogate.Message) turnstart.Reads {
	if len(input) == 0 || !p.shared.replicas() {
		return turnstart.Reads{}
	}
	r := turnstart.Reads{Checkpoint: p.cpAtBegin && t.ev.Conversation.DM}
	if cached, _ := p.hist.lookup(t.key); len(cached) > 0 {
		last := cached[len(cached)-1] // a copy: the cache's array is its own
		r.Since, r.SinceLimit = &last, p.hist.window
	}
	return r
}

// startOwner is the turn as its start writes' owner (turnstart.Owner); a one-pointer struct,
// so passing it costs no allocation.
type startOwner struct{ t *Turn }

// StartFailed stops the turn with the failed write as its cause.
func (o startOwner) StartFailed(err error) { o.t.stop(fmt.Errorf("pipeline: %w", err)) }

// DueUsage takes the usage buffered so far, to be written with the input; the turn's end
// waits for that write's outcome (inFlight).
func (o startOwner) DueUsage() []echogate.UsageRecord {
	o.t.usage.inFlight.Add(1)
	return o.t.usage.take()
}

// UsageWritten observes the written entries, or gives them back for the turn's end to record.
func (o startOwner) UsageWritten(usage []echogate.UsageRecord, err error) {
	defer o.t.usage.inFlight.Done()
	if err != nil {
		o.t.usage.putBack(usage)
		return
	}
	for _, u := range usage {
		o.t.observeUsage(u)
	}
}

// writeProgress is what a turn does when the model asks for a tool: its input messages and
// the usage buffered so far are due together, in one write (turnstart.Start.Progress), issued
// by the first that needs them. When the input was written already (a later tool call of the
// turn, or a store that writes it at once), the usage goes to the ledger now
// (flushUsageAsync), awaited by the turn's end (inFlight).
func (t *Turn) writeProgress() {
	if !t.w.Progress() {
		t.flushUsageAsync()
	}
}
