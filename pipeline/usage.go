package pipeline

import (
	"context"
	"sync"

	"github.com/echogate/echogate"
)

// usageLedger is a turn's spend: running totals for its record, and the ledger entries not
// written yet. Usage enters only through Turn.reportUsage (the model, tools and compression
// report it once each); the turn's last entries are written with its end (TurnLog.FinishTurn).
type usageLedger struct {
	mu       sync.Mutex
	in, out  int64
	cached   int64 // the part of in read from the provider's prompt cache
	cost     float64
	buf      []echogate.UsageRecord // entries not written yet
	inFlight sync.WaitGroup         // entries being written
	holds    []func()               // budget holds of calls not in the ledger yet (peruser.go)

	// Given at construction (newTurn): what prices usage (nil: zero cost) and who sees each
	// stored entry.
	pricer    Pricer
	observers []func(echogate.UsageRecord)
}

// totals are the turn's tokens and cost so far.
func (l *usageLedger) totals() (in, out, cached int64, cost float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.in, l.out, l.cached, l.cost
}

// buffered reports whether entries wait in the buffer.
func (l *usageLedger) buffered() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buf) > 0
}

// take returns the buffered entries and empties the buffer.
func (l *usageLedger) take() []echogate.UsageRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := l.buf
	l.buf = nil
	return buf
}

// putBack returns entries whose write failed to the front of the buffer, for a later write
// (the turn's end) to record.
func (l *usageLedger) putBack(recs []echogate.UsageRecord) {
	if len(recs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(append(make([]echogate.UsageRecord, 0, len(recs)+len(l.buf)), recs...), l.buf...)
}

// reportUsage is the single entry point of usage into the ledger. An entry is kept until the
// model asks for a tool (the turn goes on: written then, see flushUsageAsync), the next model
// call's budget check (flushUsage) or the turn's end, which records it in its last round trip.
func (t *Turn) reportUsage(u echogate.Usage) {
	if t.usage.pricer != nil && u.CostUSD == 0 {
		u.CostUSD = t.usage.pricer.Price(u)
	}
	t.metrics.ModelCall(u.Model, u.Failed, u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CostUSD, string(u.Kind))
	t.metrics.AgentUsage(t.prof.Name, u.InputTokens, u.OutputTokens, u.CostUSD)
	rec := echogate.UsageRecord{Turn: t.id, Session: t.key, UserID: t.userID,
		Channel: t.channel, Agent: t.prof.Name, Trigger: t.usageTrigger(), Usage: u, At: t.now()}
	l := &t.usage
	l.mu.Lock()
	l.in += u.InputTokens
	l.out += u.OutputTokens
	l.cached += u.CachedInputTokens
	l.cost += u.CostUSD
	l.buf = append(l.buf, rec)
	l.mu.Unlock()
}

// recordAsync writes one ledger entry in the background. It does not hold up the agent loop;
// the turn's end waits for it, so a finished turn's usage is always in the ledger.
func (t *Turn) recordAsync(rec echogate.UsageRecord) {
	t.usage.inFlight.Add(1)
	go func() {
		defer t.usage.inFlight.Done()
		ctx, cancel := context.WithTimeout(t.detached, stageTimeout)
		defer cancel()
		t.record(ctx, rec)
	}()
}

// record writes one ledger entry and tells the usage observers.
func (t *Turn) record(ctx context.Context, rec echogate.UsageRecord) {
	id, err := t.store.RecordUsage(ctx, rec)
	if err != nil {
		t.log.Error("pipeline: record usage in ledger", "model", rec.Usage.Model, "err", err)
		return
	}
	rec.ID = id
	t.observeUsage(rec)
}

// flushUsage records the buffered entries now: before a budget check, which must see this
// turn's spend so far.
func (t *Turn) flushUsage(ctx context.Context) {
	for _, rec := range t.usage.take() {
		t.record(ctx, rec)
	}
}

// flushUsageAsync writes the buffered entries in the background: the model asked for a tool,
// so the turn goes on and its spend so far must reach the ledger (and the budgets of the
// user's other conversations) now, not when the turn ends.
func (t *Turn) flushUsageAsync() {
	for _, rec := range t.usage.take() {
		t.recordAsync(rec)
	}
}

// observeUsage tells the usage observers about a stored ledger entry.
func (t *Turn) observeUsage(rec echogate.UsageRecord) {
	for _, o := range t.usage.observers {
		o(rec)
	}
}
