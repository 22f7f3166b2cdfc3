package pipeline

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/echogate/echogate"
)

// pendingIndex knows which sessions may have a paused turn when this process is the only one
// that pauses turns in its store: a store without a SessionLocker (SQLite, one gateway
// process). An event of a session outside it skips the read of its paused turn (GetPending),
// which nearly every event paid for nothing. With replicas every event reads it.
//
// It is loaded from the store when the pipeline starts (ListPending); until then, or when the
// load failed, it knows nothing and every event reads. A session enters it before its pause is
// saved and leaves it after the pause was deleted, so it never lacks a session that has one;
// a session whose pause went another way (its session deleted) only costs a read.
//
// Lock-free on the read every event makes (a sync.Map): no lock shared by all sessions.
type pendingIndex struct {
	ready atomic.Bool
	keys  sync.Map // echogate.SessionKey -> struct{}
}

// load fills the index with the sessions that have a paused turn now.
func (x *pendingIndex) load(ctx context.Context, st PendingStore) error {
	pend, err := st.ListPending(ctx, 0)
	if err != nil {
		return fmt.Errorf("pipeline: load paused turns: %w", err)
	}
	for _, pt := range pend {
		x.keys.Store(pt.Session, struct{}{})
	}
	x.ready.Store(true)
	return nil
}

// mayHave reports whether key may have a paused turn (always, until the index is loaded).
func (x *pendingIndex) mayHave(key echogate.SessionKey) bool {
	if !x.ready.Load() {
		return true
	}
	_, ok := x.keys.Load(key)
	return ok
}

func (x *pendingIndex) add(key echogate.SessionKey) { x.keys.Store(key, struct{}{}) }

func (x *pendingIndex) remove(key echogate.SessionKey) { x.keys.Delete(key) }

// errNoPause is getPending's answer from the index: every event of a session without a pause
// gets it, so it is made once.
var errNoPause = fmt.Errorf("pipeline: no paused turn in the session: %w", echogate.ErrNotFound)

// getPending reads the session's paused turn, or answers ErrNotFound from the index.
func (p *Pipeline) getPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error) {
	if !p.pending.mayHave(key) {
		return echogate.PendingTurn{}, errNoPause
	}
	return p.d.Store.GetPending(ctx, key)
}

// savePending saves a pause; the index learns of it first.
func (p *Pipeline) savePending(ctx context.Context, pend echogate.PendingTurn) error {
	p.pending.add(pend.Session)
	return p.d.Store.SavePending(ctx, pend)
}

// deletePending deletes the session's pause; the index forgets it once it is gone.
func (p *Pipeline) deletePending(ctx context.Context, key echogate.SessionKey) error {
	err := p.d.Store.DeletePending(ctx, key)
	if err == nil {
		p.pending.remove(key)
	}
	return err
}

// lockedPending is a session's paused turn as read with the session's lock (PendingLocker):
// what getPending answers, once, for the event handled under that lock.
type lockedPending struct {
	key       echogate.SessionKey
	pend      *echogate.PendingTurn // nil: none
	eventDone bool                  // the handled event was completed meanwhile (another replica)
}

// tryLockSession takes key's lock, reading its paused turn with it onto ctl when the store can.
func (p *Pipeline) tryLockSession(ctx context.Context, ctl *turnCtl, key echogate.SessionKey) (func(), bool, error) {
	if p.shared.pendLocker == nil {
		return p.shared.locker.TryLockSession(ctx, key)
	}
	unlock, got, pend, done, err := p.shared.pendLocker.TryLockSessionPending(ctx, key, ctl.eventKey)
	if got && err == nil {
		ctl.locked = &lockedPending{key: key, pend: pend, eventDone: done}
	}
	return unlock, got, err
}

// routePending is getPending for the event route sends: the paused turn read with the
// session's lock when that read was of key (a command's own mailbox locks another key) and
// nothing ran since (handle forgets it before a replay's recovery), else the store's answer.
func (p *Pipeline) routePending(ctx context.Context, ctl *turnCtl, key echogate.SessionKey) (echogate.PendingTurn, error) {
	lp := ctl.locked
	ctl.locked = nil
	switch {
	case lp == nil || lp.key != key:
		return p.getPending(ctx, key)
	case lp.pend == nil:
		return echogate.PendingTurn{}, errNoPause
	}
	return *lp.pend, nil
}
