package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/echogate/echogate"
)

// The session's lock released with the turn's end (TurnEnd.ReleaseSession): the end's
// statements go on the lock's connection, in one implicit transaction that first takes the
// same lock at transaction level (granted at once: this connection holds it) and ends by
// releasing the session-level hold. The transaction-level hold lasts until the commit, so no
// other replica takes the lock before the end is durable, and one round trip does both.
const (
	sessionXactLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('echogate:session:' || $1, 0))`
)

// finishReleasing writes end and gives back the session's lock in one round trip on the lock's
// connection (its lane's group), when this store holds the lock there. ok is false when it did
// not (no lock held here, a lease through a pooler, or the lane's connection changed): the
// caller writes the end as usual. A failed round trip returns ok false (nothing was written, the
// lock is still held); when the connection itself failed it is dropped (its locks are in doubt,
// and the server releases them with it).
func (s *Store) finishReleasing(ctx context.Context, end echogate.TurnEnd) (turnErr, eventErr error, ok bool) {
	p, err := s.conns(ctx)
	if err != nil || p.mux == nil {
		return nil, nil, false
	}
	h := p.mux.holding(end.Session)
	if h == nil {
		return nil, nil, false
	}
	op := &finishOp{s: s, h: h, end: end, ids: make([]int64, len(end.Usage))}
	op.b.Queue(sessionXactLockSQL, string(end.Session))
	if err := s.queueFinish(&op.b, end); err != nil {
		return nil, nil, false
	}
	// Like the lock's own round trips, not cut by ctx once sent: a cancelled batch would leave
	// the connection, and the other sessions' locks on it, in doubt.
	if err := h.lane.do(ctx, op); err != nil {
		// Rolled back: nothing was written and the session-level hold is still there (the
		// release never ran). The caller writes the end apart and the lock's unlock gives it
		// back.
		s.log.Warn("postgres: finish turn on the session's lock connection failed; the end is written apart",
			"session", string(end.Session), "turn", end.Turn.ID, "err", err)
		return nil, nil, false
	}
	if !op.sent {
		return nil, nil, false
	}
	setUsageIDs(end, op.ids)
	return op.turnErr, op.eventErr, true
}

// finishOp is finishReleasing's op: the transaction-level lock and the end's statements (b),
// and the release of the session-level hold after its group's statements.
type finishOp struct {
	s        *Store
	h        *heldLock
	end      echogate.TurnEnd
	b        pgx.Batch
	ids      []int64
	sent     bool
	released bool
	turnErr  error
	eventErr error
}

func (o *finishOp) start(l *lockLane) bool {
	o.sent = !o.h.released && l.gen == o.h.gen && l.conn != nil
	return o.sent
}

func (o *finishOp) queue(b *pgx.Batch) { requeue(b, &o.b) }

func (o *finishOp) read(br pgx.BatchResults) (err error) {
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("take the session's lock for the end's transaction: %w", err)
	}
	o.turnErr, o.eventErr, err = readFinish(br, o.end, o.ids)
	return err
}

func (o *finishOp) locks() echogate.SessionKey    { return "" }
func (o *finishOp) releases() echogate.SessionKey { return o.end.Session }
func (o *finishOp) readRelease(released bool)     { o.released = released }

func (o *finishOp) done(_ *lockLane, _ uint64, err error) (drop bool) {
	if err != nil {
		// Rolled back (the lane dropped a connection that broke): the hold was never released.
		o.sent = false
		return false
	}
	o.h.released = true
	if !o.released {
		// Written, but the lock was not held on its connection: what else it holds is in doubt.
		o.s.log.Warn("postgres: the session's lock was not held on its connection at the turn's end; its locks are given back",
			"session", string(o.end.Session), "turn", o.end.Turn.ID)
		return true
	}
	return false
}

// isServerError tells an error the server answered (the connection is still in step: a failed
// batch was rolled back at its Sync) from one that leaves the connection in doubt.
func isServerError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}
