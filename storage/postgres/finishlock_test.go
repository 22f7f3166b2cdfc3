package postgres_test

import (
	"time"

	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/postgres"
)

// TestFinishTurnReleasesTheSessionLock: a turn's end marked ReleaseSession gives the session's
// lock back in the round trip that writes the end, and only once it committed: another replica
// takes the lock right after and reads the whole end. The unlock the lock returned then does
// nothing more (no round trip, and the connection's other locks stay held).
//
// Through a pooler the lock is a lease row, deleted in the end's transaction.
func TestFinishTurnReleasesTheSessionLock(t *testing.T) {
	t.Parallel()
	onTwoReplicas(t, finishReleases)
}

// onTwoReplicas runs check on two stores of one database, a counting its round trips, directly
// (one lock connection each) and through PgBouncer (database.pooler: transaction), in parallel.
func onTwoReplicas(t *testing.T, check func(t *testing.T, a, b *postgres.Store, tc *tripCounter)) {
	t.Run("Direct", func(t *testing.T) {
		t.Parallel()
		schema := newSchema(t)
		tc := &tripCounter{}
		a := openStore(t, postgres.Config{Schema: schema, MaxConns: 4, MaxLockConns: 1, Tracer: tc})
		b := openStore(t, postgres.Config{Schema: schema, MaxConns: 2, MaxLockConns: 1})
		if err := a.Migrate(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		check(t, a, b, tc)
	})
	t.Run("PgBouncer", func(t *testing.T) {
		t.Parallel()
		db := newPoolerDatabase(t)
		tc := &tripCounter{}
		check(t, newPooledStore(t, db, postgres.Config{Tracer: tc}), newPooledStore(t, db, postgres.Config{}), tc)
	})
}

func finishReleases(t *testing.T, a, b *postgres.Store, tc *tripCounter) {
	ctx := ctxT(t)
	key, other := echogate.SessionKey("web:released"), echogate.SessionKey("web:still-held")
	unlockOther, ok, err := a.TryLockSession(ctx, other)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(%s) = %v, %v", other, ok, err)
	}
	defer unlockOther()

	for i := range 3 { // the first turns prepare the statements
		unlock, ok, err := a.TryLockSession(ctx, key)
		if err != nil || !ok {
			t.Fatalf("turn %d: TryLockSession = %v, %v", i, ok, err)
		}
		id, ev := randomName("t_"), randomName("ev_")
		if _, err := a.ClaimEvent(ctx, ev, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := a.CreateTurn(ctx, echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnRunning}); err != nil {
			t.Fatal(err)
		}
		tc.reset()
		err = a.FinishTurn(ctx, echogate.TurnEnd{Session: key, Turn: echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnDoneSt},
			Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "q"}, {Role: echogate.RoleAssistant, Content: "a"}},
			EventKey: ev, ReleaseSession: true})
		if err != nil {
			t.Fatalf("turn %d: FinishTurn = %v", i, err)
		}
		n, sql := tc.get()
		// The other replica takes the lock before this one's unlock ran: the end released it.
		unlockB, ok, err := b.TryLockSession(ctx, key)
		if err != nil || !ok {
			t.Fatalf("turn %d: another replica's TryLockSession after the end = %v, %v; want the lock (released with the end)", i, ok, err)
		}
		if h, err := b.History(ctx, key, 0); err != nil || len(h) != 2*(i+1) {
			t.Errorf("turn %d: the other replica reads %d messages (%v), want %d: the end committed before the release", i, len(h), err, 2*(i+1))
		}
		if got, err := b.GetTurn(ctx, id); err != nil || got.Status != echogate.TurnDoneSt {
			t.Errorf("turn %d: the other replica reads the turn as %+v (%v), want done", i, got.Status, err)
		}
		tc.reset()
		unlock() // does nothing more: the lock went with the end
		if n2, sql2 := tc.get(); n2 != 0 {
			t.Errorf("turn %d: unlock after a releasing end made %d round trips %v, want 0", i, n2, sql2)
		}
		unlockB()
		if i == 2 && n != 1 {
			t.Errorf("FinishTurn with ReleaseSession: %d round trips %v, want 1", n, sql)
		}
	}
	// The lane's other lock was not lost on the way.
	if _, ok, err := b.TryLockSession(ctx, other); err != nil || ok {
		t.Errorf("another replica's TryLockSession(%s) = %v, %v; want refused (still held here)", other, ok, err)
	}
}

// A turn's end marked ReleaseSession for a session this store does not hold the lock of is
// written as any end is.
func TestFinishTurnReleaseWithoutTheLock(t *testing.T) {
	t.Parallel()
	st := openStore(t, postgres.Config{Schema: newSchema(t), MaxConns: 2, MaxLockConns: 1})
	ctx := ctxT(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key := echogate.SessionKey("web:unlocked")
	id := randomName("t_")
	if err := st.CreateTurn(ctx, echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishTurn(ctx, echogate.TurnEnd{Session: key, Turn: echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnDoneSt},
		Messages: []echogate.Message{{Role: echogate.RoleAssistant, Content: "a"}}, ReleaseSession: true}); err != nil {
		t.Fatalf("FinishTurn = %v", err)
	}
	if h, err := st.History(ctx, key, 0); err != nil || len(h) != 1 {
		t.Errorf("History = %d messages (%v), want 1", len(h), err)
	}
}

// A releasing end the server refuses (a NUL byte in a usage entry's model) is rolled back on the
// lock's connection: the connection is kept, with every lock on it (another session's stays
// held), the end is written apart as any failed end is, and the unlock gives the lock back.
func TestFinishTurnReleaseRefusedKeepsTheLocks(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, postgres.Config{Schema: schema, MaxConns: 4, MaxLockConns: 1})
	b := openStore(t, postgres.Config{Schema: schema, MaxConns: 2, MaxLockConns: 1})
	ctx := ctxT(t)
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, other := echogate.SessionKey("web:refused"), echogate.SessionKey("web:bystander")
	unlockOther, ok, err := a.TryLockSession(ctx, other)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(%s) = %v, %v", other, ok, err)
	}
	defer unlockOther()
	unlock, ok, err := a.TryLockSession(ctx, key)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(%s) = %v, %v", key, ok, err)
	}
	id := randomName("t_")
	if err := a.CreateTurn(ctx, echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnRunning}); err != nil {
		t.Fatal(err)
	}
	err = a.FinishTurn(ctx, echogate.TurnEnd{Session: key, Turn: echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnDoneSt},
		Messages: []echogate.Message{{Role: echogate.RoleAssistant, Content: "a"}},
		Usage:    []echogate.UsageRecord{{Turn: id, Session: key, Usage: echogate.Usage{Kind: "chat", Model: "bad\x00model"}}}, ReleaseSession: true})
	if err == nil {
		t.Fatal("FinishTurn with a NUL byte in a usage entry = nil, want the server's refusal")
	}
	if h, err := a.History(ctx, key, 0); err != nil || len(h) != 1 {
		t.Errorf("History after the refused end = %d messages (%v), want 1 (written apart)", len(h), err)
	}
	if _, ok, err := b.TryLockSession(ctx, key); err != nil || ok {
		t.Errorf("another replica's TryLockSession(%s) before the unlock = %v, %v; want refused (still held)", key, ok, err)
	}
	if _, ok, err := b.TryLockSession(ctx, other); err != nil || ok {
		t.Errorf("another replica's TryLockSession(%s) = %v, %v; want refused (the connection and its locks kept)", other, ok, err)
	}
	unlock()
	unlockB, ok, err := b.TryLockSession(ctx, key)
	if err != nil || !ok {
		t.Errorf("another replica's TryLockSession(%s) after the unlock = %v, %v; want the lock", key, ok, err)
	}
	unlockB()
}
