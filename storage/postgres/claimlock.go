package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

// qClaimLock claims an event and, only when the claim is the first, tries its session's
// advisory lock, in one statement: the first column says whether the claim is the first, the
// second whether the lock was taken (CASE evaluates the lock only after the claim).
const qClaimLock = `WITH c AS (
  INSERT INTO events (key, payload, claimed_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM c),
  CASE WHEN EXISTS (SELECT 1 FROM c) THEN pg_try_advisory_lock(hashtextextended('echogate:session:' || $4, 0)) ELSE false END`

// ClaimEventLocking is ClaimEvent that, when the claim is the first, also tries the lock of
// the event's session and reads its paused turn, in the same round trip
// (pipeline.ClaimLocker): the claim, the lock and the read are one batch on the session's lock
// connection, the read after the lock. The pipeline uses it for an event whose session is idle
// in this process, so that the event's claim and its turn's lock cost one round trip, not two.
//
// locked reports whether the lock was taken; unlock (never nil) then releases it, as
// TryLockSession's does, and pend is the paused turn read with it (nil: none). When the claim
// is not the first, no lock is taken. Through a transaction pooler the lock is the session's
// lease, taken in the claim's statement (leaser.claimLock). When this store holds the session
// already it claims alone and locked is false (on the session's lock connection, with the other
// work waiting for it, when the lock is held: claimBusy). It blocks for one round trip; on a
// direct connection it is not cut by ctx once sent (like the lock's). An error means nothing
// was claimed and no lock is held.
func (s *Store) ClaimEventLocking(ctx context.Context, key string, payload []byte, at time.Time, session echogate.SessionKey) (first bool, unlock func(), locked bool, pend *echogate.PendingTurn, err error) {
	noop := func() {}
	switch {
	case key == "":
		return false, noop, false, nil, fmt.Errorf("postgres: claim event: %w: empty key", ErrInvalid)
	case session == "":
		return false, noop, false, nil, fmt.Errorf("postgres: claim event %q: %w: empty session key", key, ErrInvalid)
	}
	p, err := s.conns(ctx)
	if err != nil {
		return false, noop, false, nil, fmt.Errorf("postgres: claim event %q: %w", key, err)
	}
	if p.leases != nil {
		return p.leases.claimLock(ctx, key, nonNil(payload), utc(s.stamp(at)), session)
	}
	if !p.mux.reserve(session) {
		first, err := s.claimBusy(ctx, p.mux, key, payload, at, session)
		return first, noop, false, nil, err
	}
	m := p.mux
	l := m.lane(session)
	rd := &pendingRead{}
	// Not cut by ctx once sent (the lane's round trips never are): the claim is durable once it
	// returns, so a caller that left meanwhile still gets it (and the lock) to hand on.
	op := &lockOp{key: session, rd: rd, sql: qClaimLock, args: []any{key, nonNil(payload), utc(s.stamp(at)), string(session)}}
	op.scan = scanClaim(&op.first)
	if err := l.do(ctx, op); err != nil || !op.got {
		m.release(session)
		if err != nil {
			return false, noop, false, nil, fail(ctx, err, "claim event %q with the lock of session %q", key, session)
		}
		return op.first, noop, false, nil, nil
	}
	if rd.found {
		pend = &rd.pend
	}
	return true, s.held(m, &heldLock{lane: l, gen: op.gen}, session), true, pend, nil
}

// scanClaim scans a claim-and-lock statement's row (qClaimLock, qClaimLease): whether the claim
// was the first into first, and the lock's outcome.
func scanClaim(first *bool) func(pgx.Row) (bool, error) {
	return func(r pgx.Row) (bool, error) {
		var got bool
		err := r.Scan(first, &got)
		return got, err
	}
}

// claimBusy claims an event of a session this store holds or is taking already: on the
// session's lane, in its next group, when the lock is held (the event will wait for the turn
// that runs); else on the pool (ClaimEvent).
func (s *Store) claimBusy(ctx context.Context, m *lockMux, key string, payload []byte, at time.Time, session echogate.SessionKey) (bool, error) {
	var lane *lockLane
	if h := m.holding(session); h != nil {
		lane = h.lane
	}
	return s.claimOn(ctx, lane, key, payload, at)
}

// claimOn is ClaimEvent on lane (nil: on the pool).
func (s *Store) claimOn(ctx context.Context, lane *lockLane, key string, payload []byte, at time.Time) (bool, error) {
	if lane == nil {
		return s.ClaimEvent(ctx, key, payload, at)
	}
	var first bool
	op := &batchOp{
		q: func(b *pgx.Batch) { b.Queue(qClaimEvent, key, nonNil(payload), utc(s.stamp(at))) },
		r: func(br pgx.BatchResults) error {
			tag, err := br.Exec()
			first = err == nil && tag.RowsAffected() == 1
			return err
		},
	}
	if err := lane.do(ctx, op); err != nil {
		return false, fail(ctx, err, "claim event %q", key)
	}
	return first, nil
}
