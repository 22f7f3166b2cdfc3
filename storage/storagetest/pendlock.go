package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// PendingLocker is the optional session lock of stores shared by replicas that reads the
// session's paused turn in the round trip that takes the lock (pipeline.PendingLocker).
type PendingLocker interface {
	Store
	TryLockSession(ctx context.Context, key echogate.SessionKey) (unlock func(), ok bool, err error)
	TryLockSessionPending(ctx context.Context, key echogate.SessionKey, event string) (unlock func(), ok bool, pend *echogate.PendingTurn, done bool, err error)
}

// RunPendingLocker checks TryLockSessionPending on two stores of one database (two replicas):
// it takes the lock as TryLockSession does (one holder; refused while another holds it, also
// through TryLockSession), and returns the session's paused turn as GetPending does: nil for
// none, the pause saved by the lock's previous holder, nothing when the lock is refused.
func RunPendingLocker(t *testing.T, open func(t *testing.T) (PendingLocker, PendingLocker)) {
	ctx := t.Context()
	a, b := open(t)
	run := time.Now().UnixNano()
	key := func(n string) echogate.SessionKey { return echogate.SessionKey(fmt.Sprintf("pendlock:%d:%s", run, n)) }

	// No pause: the lock, and nil.
	unlock, ok, pend, _, err := a.TryLockSessionPending(ctx, key("none"), "")
	if err != nil || !ok || pend != nil {
		t.Fatalf("TryLockSessionPending(no pause) = %v, %+v, %v, want true, nil, nil", ok, pend, err)
	}
	if _, ok, err := b.TryLockSession(ctx, key("none")); err != nil || ok {
		t.Errorf("TryLockSession on the other replica while held = %v, %v, want false, nil", ok, err)
	}
	if _, ok, pend, _, err := b.TryLockSessionPending(ctx, key("none"), ""); err != nil || ok || pend != nil {
		t.Errorf("TryLockSessionPending on the other replica while held = %v, %+v, %v, want false, nil, nil", ok, pend, err)
	}
	unlock()

	// The holder pauses a turn and lets go: the next holder reads the pause with the lock.
	want := echogate.PendingTurn{Session: key("paused"), Turn: "t1", Kind: echogate.PauseApproval, CallID: "c1", Tool: "run",
		State: []byte(`{"x":1}`), RequestedBy: "web:u1", CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	unlock, ok, _, _, err = a.TryLockSessionPending(ctx, want.Session, "")
	if err != nil || !ok {
		t.Fatalf("TryLockSessionPending(paused) = %v, %v, want true, nil", ok, err)
	}
	must(t, "SavePending", a.SavePending(ctx, want))
	if _, ok, pend, _, err := b.TryLockSessionPending(ctx, want.Session, ""); err != nil || ok || pend != nil {
		t.Errorf("TryLockSessionPending(paused, held elsewhere) = %v, %+v, %v, want false, nil, nil", ok, pend, err)
	}
	unlock()
	unlock, ok, pend, _, err = b.TryLockSessionPending(ctx, want.Session, "")
	if err != nil || !ok || pend == nil {
		t.Fatalf("TryLockSessionPending(paused) on the next holder = %v, %+v, %v, want true, the pause, nil", ok, pend, err)
	}
	checkPending(t, "TryLockSessionPending", *pend, want)
	must(t, "DeletePending", b.DeletePending(ctx, want.Session))
	unlock()
	if unlock, ok, pend, _, err := a.TryLockSessionPending(ctx, want.Session, ""); err != nil || !ok || pend != nil {
		t.Errorf("TryLockSessionPending(after the pause was deleted) = %v, %+v, %v, want true, nil, nil", ok, pend, err)
	} else {
		unlock()
	}

	// The event a replica waited with: done once another replica completed it (it took the event
	// over and answered it), not while it is only claimed, and not for an unknown key.
	ev := fmt.Sprintf("pendlock:%d:event", run)
	_, err = a.ClaimEvent(ctx, ev, []byte(`{}`), time.Now())
	must(t, "ClaimEvent", err)
	for _, c := range []struct {
		name, event string
		complete    bool
		want        bool
	}{{"claimed", ev, false, false}, {"completed elsewhere", ev, true, true}, {"unknown", ev + ":none", false, false}} {
		if c.complete {
			must(t, "CompleteEvent", b.CompleteEvent(ctx, c.event, time.Now()))
		}
		unlock, ok, _, done, err := a.TryLockSessionPending(ctx, key("event"), c.event)
		if err != nil || !ok || done != c.want {
			t.Errorf("TryLockSessionPending(event %s) = ok %v, done %v, %v; want true, %v, nil", c.name, ok, done, err, c.want)
		}
		if ok {
			unlock()
		}
	}
}
