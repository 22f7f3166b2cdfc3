package cost

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// Reservations: a model call's estimate counts against every budget that applies to it from
// the moment its check passes until the caller releases it, which it does once the call's
// usage is in the ledger (or the call failed). Parallel calls of one user (several turns in
// several conversations) therefore see each other: the calls admitted together never exceed a
// limit, as long as each costs no more than its estimate (Estimate: output capped by the
// request's MaxTokens, input about four characters a token).
//
// Reservations live in this process's memory only. After a restart the ledger is the truth:
// calls that were in flight when the process died are neither reserved nor, unless their usage
// was recorded, spent. Replicas sharing a ledger do not see each other's reservations, only
// each other's recorded spend.

// reserveShards spreads the reservation sums over locks: one user's windows share a shard with
// few others; the gateway-wide windows (day, month) are one key whatever the shard count.
const reserveShards = 32

type reserveShard struct {
	mu   sync.Mutex
	held map[echogate.UsageFilter]heldSum
}

// heldSum is what the calls in flight hold in one window.
type heldSum struct {
	usd   float64
	calls int // the sum is dropped, not left at a float residue, when the last call releases
}

type reservations struct {
	seed   maphash.Seed
	shards [reserveShards]reserveShard
}

func newReservations() *reservations {
	r := &reservations{seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i].held = map[echogate.UsageFilter]heldSum{}
	}
	return r
}

func (r *reservations) shard(f echogate.UsageFilter) *reserveShard {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(f.Turn)
	h.WriteString(string(f.Session))
	h.WriteString(f.UserID)
	h.WriteString(f.Channel)
	h.WriteString(f.Agent)
	return &r.shards[h.Sum64()%reserveShards]
}

// add holds usd in f's window and returns what the window holds now, usd included: the add and
// the read are one step, so of two parallel calls the later one always sees the earlier.
func (r *reservations) add(f echogate.UsageFilter, usd float64) float64 {
	sh := r.shard(f)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.held[f]
	h.usd += usd
	h.calls++
	sh.held[f] = h
	return h.usd
}

func (r *reservations) remove(f echogate.UsageFilter, usd float64) {
	sh := r.shard(f)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.held[f]
	h.usd -= usd
	h.calls--
	if h.calls <= 0 {
		delete(sh.held, f)
		return
	}
	sh.held[f] = h
}

// held returns the USD held by calls in flight in the window f selects (as windows builds it).
func (t *Tracker) held(f echogate.UsageFilter) float64 {
	sh := t.res.shard(f)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.held[f].usd
}

// Reserve is Check that holds the call's estimate against every budget that applies to s until
// release is called: call release once the call's usage is in the ledger (recorded, so the
// ledger counts it from then on) or the call failed. Releasing twice is harmless. The check
// sees the ledger and every reservation held by calls in flight, the new one included: for
// each limit, spend plus what others hold must be below it, and with this call's estimate
// within it. A refusal is a *LimitError as Check's, and holds nothing.
//
// The hold is taken before the ledger is read and released only after the call's usage is
// stored, so a concurrent check counts every admitted call at least once: in the ledger, in
// the holds, or (for a moment) in both. Reserve blocks on the ledger queries as Check does.
func (t *Tracker) Reserve(ctx context.Context, s Scope, req agent.Request) (release func(), err error) {
	lim := t.Limits()
	now := t.cfg.Now()
	ws := t.windows(lim, s, now)
	if len(ws) == 0 {
		return func() {}, nil
	}
	est := t.Estimate(req)
	holds := make([]float64, len(ws))
	for i, w := range ws {
		holds[i] = t.res.add(w.filter, est)
	}
	release = sync.OnceFunc(func() {
		for _, w := range ws {
			t.res.remove(w.filter, est)
		}
	})
	for i, w := range ws {
		spent, err := t.spend(ctx, w.filter, now)
		if err != nil {
			err = fmt.Errorf("cost: check %s for turn %s (user %s): read spend: %w", w.kind, s.Turn, s.UserID, err)
			if t.cfg.FailOpen {
				t.log.Error("budget check skipped: ledger unreadable", "turn", s.Turn, "session", s.Session, "err", err)
				continue
			}
			release()
			return nil, err
		}
		others := holds[i] - est
		// A used-up budget refuses every call, even one estimated at 0 (an unpriced model);
		// otherwise the call must fit. The nano-dollar tolerance absorbs float sums.
		if spent+others < w.limit-1e-9 && spent+others+est <= w.limit+1e-9 {
			continue
		}
		release()
		le := t.limitError(w, s, spent, others, est, now)
		t.log.Info("budget limit reached", "turn", s.Turn, "session", s.Session, "channel", s.Channel, "user", s.UserID,
			"limit", string(w.kind), "limit_usd", w.limit, "spent_usd", spent, "held_usd", others, "estimate_usd", est,
			"deferred", le.Deferred, "model", req.Model)
		return nil, le
	}
	return release, nil
}
