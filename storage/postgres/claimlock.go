package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
// already it claims alone (ClaimEvent) and locked is false. It blocks for one round trip; on a
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
		first, err := s.ClaimEvent(ctx, key, payload, at)
		return first, noop, false, nil, err
	}
	m := p.mux
	l := m.lane(session)
	rd := &pendingRead{}
	gen, first, got, err := l.claimLock(ctx, m.pool, key, nonNil(payload), utc(s.stamp(at)), session, rd)
	if err != nil || !got {
		m.release(session)
		if err != nil {
			return false, noop, false, nil, fail(ctx, err, "claim event %q with the lock of session %q", key, session)
		}
		return first, noop, false, nil, nil
	}
	if rd.found {
		pend = &rd.pend
	}
	return true, s.held(m, l, gen, session), true, pend, nil
}

// claimLock sends qClaimLock and the read of session's paused turn on the lane's connection
// (acquired first if needed) in one batch, and returns the connection's generation.
func (l *lockLane) claimLock(ctx context.Context, pool *pgxpool.Pool, key string, payload []byte, at time.Time, session echogate.SessionKey, rd *pendingRead) (gen uint64, first, got bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ready(ctx, pool); err != nil {
		return 0, false, false, err
	}
	// Not cut by ctx once sent: a cancelled batch would leave the connection (and the other
	// sessions' locks on it) in doubt. The claim is durable once it returns, so a caller that
	// left meanwhile still gets it (and the lock) to hand on.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
	defer cancel()
	got, err = lockAndRead(qctx, l.conn, session, rd, scanClaim(&first), qClaimLock, key, payload, at, string(session))
	if err != nil {
		// The claim rolled back; a lock taken before the failure is still held (session-level):
		// give it back, or drop the connection when it is not in step (its locks in doubt).
		if !isServerError(err) {
			l.drop()
		} else if _, rerr := l.release(qctx, session); rerr != nil {
			l.drop()
		}
		return 0, false, false, err
	}
	return l.gen, first, got, nil
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
