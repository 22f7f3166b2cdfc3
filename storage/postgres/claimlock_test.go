package postgres_test

import (
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/postgres"
)

// TestClaimEventLocking: the first claim of an event also takes its session's lock and reads the
// paused turn, in one round trip; a repeated claim takes no lock; a session another replica
// holds is claimed without its lock; the lock taken is released by its unlock.
//
// Through a pooler the lock is the session's lease, taken in the claim's statement.
func TestClaimEventLocking(t *testing.T) {
	t.Parallel()
	onTwoReplicas(t, claimLocking)
}

func claimLocking(t *testing.T, a, b *postgres.Store, tc *tripCounter) {
	ctx := ctxT(t)
	key := echogate.SessionKey("web:claimlock")
	paused := echogate.PendingTurn{Session: key, Turn: "t_paused", Kind: echogate.PauseApproval, CallID: "c1", Tool: "delete_file",
		State: []byte(`{}`), CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if err := a.SavePending(ctx, paused); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // the first round prepares the statements
		ev := randomName("ev_")
		tc.reset()
		first, unlock, locked, pend, err := a.ClaimEventLocking(ctx, ev, []byte(`{"id":"x"}`), time.Time{}, key)
		n, sql := tc.get()
		if err != nil || !first || !locked {
			t.Fatalf("round %d: ClaimEventLocking = first %v, locked %v, %v; want the claim and the lock", i, first, locked, err)
		}
		if pend == nil || pend.Turn != "t_paused" {
			t.Errorf("round %d: paused turn read with the lock = %+v, want t_paused", i, pend)
		}
		if i == 2 && n != 1 {
			t.Errorf("ClaimEventLocking: %d round trips %v, want 1", n, sql)
		}
		if _, ok, err := b.TryLockSession(ctx, key); err != nil || ok {
			t.Errorf("round %d: another replica's TryLockSession while held = %v, %v; want refused", i, ok, err)
		}
		evs, err := b.UnfinishedEvents(ctx, time.Now().Add(time.Hour), 0)
		if err != nil || !hasEvent(evs, ev) {
			t.Errorf("round %d: the claim is not durable: UnfinishedEvents = %d events (%v), want %s among them", i, len(evs), err, ev)
		}
		// The same event again (a platform's retry): not the first, no lock taken.
		again, unlock2, locked2, _, err := a.ClaimEventLocking(ctx, ev, nil, time.Time{}, key)
		if err != nil || again || locked2 {
			t.Errorf("round %d: a repeated claim = first %v, locked %v, %v; want neither", i, again, locked2, err)
		}
		unlock2()
		unlock()
		unlockB, ok, err := b.TryLockSession(ctx, key)
		if err != nil || !ok {
			t.Fatalf("round %d: another replica's TryLockSession after unlock = %v, %v; want the lock", i, ok, err)
		}
		// Held by the other replica: the claim is made, the lock is not taken.
		ev2 := randomName("ev_")
		first, unlock3, locked3, _, err := a.ClaimEventLocking(ctx, ev2, nil, time.Time{}, key)
		if err != nil || !first || locked3 {
			t.Errorf("round %d: claim while another replica holds the session = first %v, locked %v, %v; want the claim without the lock", i, first, locked3, err)
		}
		unlock3()
		unlockB()
	}
	if _, _, _, _, err := a.ClaimEventLocking(ctx, "", nil, time.Time{}, key); err == nil {
		t.Error("ClaimEventLocking with an empty key = nil error, want one")
	}
}

func hasEvent(evs []echogate.ClaimedEvent, key string) bool {
	for _, e := range evs {
		if e.Key == key {
			return true
		}
	}
	return false
}
