package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/echogate/echogate/storage/postgres"
)

// laneRig is a store with one lock lane (a, its round trips counted), another replica b on the
// same database, and a way to line ops up behind a's busy lane.
type laneRig struct {
	t      *testing.T
	a, b   *postgres.Store
	tc     *tripCounter
	queued func() int
	wg     sync.WaitGroup
}

// newLaneRig makes the rig directly (lock connections), or through PgBouncer with pooled (the
// locks are lease rows; a lane takes a pooled connection per round trip).
func newLaneRig(t *testing.T, pooled bool) *laneRig {
	r := &laneRig{t: t, tc: &tripCounter{}}
	if pooled {
		db := newPoolerDatabase(t)
		r.a = newPooledStore(t, db, postgres.Config{MaxLockConns: 1, Tracer: r.tc})
		r.b = newPooledStore(t, db, postgres.Config{MaxLockConns: 1})
		return r
	}
	schema := newSchema(t)
	r.a = openStore(t, postgres.Config{Schema: schema, MaxConns: 4, MaxLockConns: 1, Tracer: r.tc})
	r.b = openStore(t, postgres.Config{Schema: schema, MaxConns: 2, MaxLockConns: 1})
	if err := r.a.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return r
}

// onLanes runs check on a lane rig directly and through PgBouncer, in parallel.
func onLanes(t *testing.T, check func(t *testing.T, r *laneRig)) {
	for _, pooled := range []bool{false, true} {
		name := map[bool]string{false: "Direct", true: "PgBouncer"}[pooled]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, newLaneRig(t, pooled))
		})
	}
}

// hold makes a's lane busy; the release it returns lets the ops lined up since go as one group.
func (r *laneRig) hold() (release func()) {
	queued, rel := r.a.HoldLane()
	r.queued = queued
	return func() {
		r.tc.reset()
		rel(queued())
		r.wg.Wait()
	}
}

// line runs op in a goroutine and returns once it waits behind the held lane, so the group's
// order is the order of the calls.
func (r *laneRig) line(op func()) {
	n := r.queued()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		op()
	}()
	for deadline := time.Now().Add(10 * time.Second); r.queued() == n; {
		if time.Now().After(deadline) {
			r.t.Fatal("the op never reached the lane")
		}
		time.Sleep(time.Millisecond)
	}
}

// claimLocked lines up a ClaimEventLocking of a new event of session key; *unlock is set to its
// lock's unlock when it got the lock (else the test fails).
func (r *laneRig) claimLocked(key echogate.SessionKey, unlock *func()) {
	r.line(func() {
		first, u, locked, _, err := r.a.ClaimEventLocking(ctxT(r.t), randomName("ev_"), nil, time.Time{}, key)
		if err != nil || !first || !locked {
			r.t.Errorf("ClaimEventLocking(%s) = first %v, locked %v, %v; want the claim and the lock", key, first, locked, err)
			return
		}
		*unlock = u
	})
}

// lockedTurn takes key's lock on a and begins a running turn there.
func (r *laneRig) lockedTurn(key echogate.SessionKey) (id string, unlock func()) {
	ctx := ctxT(r.t)
	unlock, ok, err := r.a.TryLockSession(ctx, key)
	if err != nil || !ok {
		r.t.Fatalf("TryLockSession(%s) = %v, %v", key, ok, err)
	}
	id = randomName("t_")
	if err := r.a.CreateTurn(ctx, echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnRunning}); err != nil {
		r.t.Fatal(err)
	}
	return id, unlock
}

// end is a releasing end of turn id of key, one answer, with usage (model "" : none).
func end(key echogate.SessionKey, id, model string) echogate.TurnEnd {
	e := echogate.TurnEnd{Session: key, Turn: echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnDoneSt},
		Messages: []echogate.Message{{Role: echogate.RoleAssistant, Content: "a"}}, ReleaseSession: true}
	if model != "" {
		e.Usage = []echogate.UsageRecord{{Turn: id, Session: key, Usage: echogate.Usage{Kind: "chat", Model: model}}}
	}
	return e
}

// held checks whether b (another replica) is refused key's lock; when it is not, it gives the
// lock back at once.
func (r *laneRig) heldElsewhere(key echogate.SessionKey) bool {
	unlock, ok, err := r.b.TryLockSession(ctxT(r.t), key)
	if err != nil {
		r.t.Fatalf("the other replica's TryLockSession(%s) = %v", key, err)
	}
	unlock()
	return !ok
}

// TestLaneGroupsWaitingOps: what waits for a busy lock lane goes in one round trip when the lane
// is free: claims taking their sessions' locks, a turn's start and a turn's end releasing its
// session, each with its own outcome. Through a pooler the same ops (with lease rows) go in one
// round trip on one pooled connection.
func TestLaneGroupsWaitingOps(t *testing.T) {
	t.Parallel()
	onLanes(t, groupsWaitingOps)
}

func groupsWaitingOps(t *testing.T, r *laneRig) {
	ctx := ctxT(t)
	ended, endUnlock := r.lockedTurn("web:ends")
	begun := randomName("t_")
	_, beginUnlock := r.lockedTurn("web:begins")
	defer beginUnlock()

	release := r.hold()
	unlocks := make([]func(), 6)
	for i := range unlocks {
		r.claimLocked(echogate.SessionKey(fmt.Sprintf("web:g%d", i)), &unlocks[i])
	}
	r.line(func() {
		if err := r.a.FinishTurn(ctx, end("web:ends", ended, "m")); err != nil {
			t.Errorf("FinishTurn = %v", err)
		}
	})
	r.line(func() {
		rd, err := r.a.BeginWithInput(ctx, echogate.TurnRecord{ID: begun, Session: "web:begins", Status: echogate.TurnRunning},
			[]echogate.Message{{Role: echogate.RoleUser, Content: "q"}}, time.Time{}, turnstart.Reads{Checkpoint: true})
		if err != nil || rd.Checkpoint.Err == nil {
			t.Errorf("BeginWithInput = %+v, %v; want no checkpoint, no error", rd, err)
		}
	})
	release()
	if n, sql := r.tc.get(); n != 1 {
		t.Errorf("8 ops lined up behind the lane: %d round trips %v, want 1", n, sql)
	}
	for i := range unlocks {
		if key := echogate.SessionKey(fmt.Sprintf("web:g%d", i)); !r.heldElsewhere(key) {
			t.Errorf("%s: another replica took the lock its grouped claim holds", key)
		}
	}
	if r.heldElsewhere("web:ends") {
		t.Error("web:ends: still locked after its grouped end released it")
	}
	if h, err := r.b.History(ctx, "web:ends", 0); err != nil || len(h) != 1 {
		t.Errorf("web:ends: the other replica reads %d messages (%v), want the end's 1", len(h), err)
	}
	if h, err := r.b.History(ctx, "web:begins", 0); err != nil || len(h) != 1 {
		t.Errorf("web:begins: %d messages (%v), want the begin's input", len(h), err)
	}
	endUnlock()
	for i, u := range unlocks {
		if u != nil {
			u()
			if key := echogate.SessionKey(fmt.Sprintf("web:g%d", i)); r.heldElsewhere(key) {
				t.Errorf("%s: still locked after its unlock", key)
			}
		}
	}
}

// TestLaneRefusedGroupRunsItsOpsAlone: when the server refuses one op of a group (a turn's end
// with a NUL byte in a usage entry), the group rolls back and every op runs again alone: the
// claims around it still get their events and their locks, each held once (one unlock gives it
// back), and the refused end is written apart with its session still locked, as it is without
// grouping. Through a pooler the leases the group took roll back with it.
func TestLaneRefusedGroupRunsItsOpsAlone(t *testing.T) {
	t.Parallel()
	onLanes(t, refusedGroupRunsAlone)
}

func refusedGroupRunsAlone(t *testing.T, r *laneRig) {
	ctx := ctxT(t)
	refused, refusedUnlock := r.lockedTurn("web:refused")
	begun := randomName("t_")
	_, beginUnlock := r.lockedTurn("web:begins")
	defer beginUnlock()

	release := r.hold()
	var before, after func()
	r.claimLocked("web:before", &before)
	r.line(func() {
		if err := r.a.FinishTurn(ctx, end("web:refused", refused, "bad\x00model")); err == nil {
			t.Error("FinishTurn with a NUL byte in a usage entry = nil, want the server's refusal")
		}
	})
	r.claimLocked("web:after", &after)
	r.line(func() {
		if _, err := r.a.BeginWithInput(ctx, echogate.TurnRecord{ID: begun, Session: "web:begins", Status: echogate.TurnRunning},
			[]echogate.Message{{Role: echogate.RoleUser, Content: "q"}}, time.Time{}, turnstart.Reads{}); err != nil {
			t.Errorf("BeginWithInput = %v", err)
		}
	})
	release()

	if h, err := r.b.History(ctx, "web:refused", 0); err != nil || len(h) != 1 {
		t.Errorf("web:refused: %d messages (%v), want 1 (the end written apart)", len(h), err)
	}
	if h, err := r.b.History(ctx, "web:begins", 0); err != nil || len(h) != 1 {
		t.Errorf("web:begins: %d messages (%v), want the begin's input", len(h), err)
	}
	for _, key := range []echogate.SessionKey{"web:before", "web:after", "web:refused"} {
		if !r.heldElsewhere(key) {
			t.Errorf("%s: another replica took its lock, want it held here", key)
		}
	}
	for _, c := range []struct {
		key    echogate.SessionKey
		unlock func()
	}{{"web:before", before}, {"web:after", after}, {"web:refused", refusedUnlock}} {
		if c.unlock == nil {
			continue
		}
		c.unlock()
		if r.heldElsewhere(c.key) {
			t.Errorf("%s: still locked after its one unlock (taken twice on the connection?)", c.key)
		}
	}
}
