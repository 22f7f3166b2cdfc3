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
// connection, when this store holds the lock there. ok is false when it did not (no lock held
// here, a lease through a pooler, or the lane's connection changed): the caller writes the end
// as usual. A failed round trip returns ok false (nothing was written, the lock is still held);
// when the connection itself failed it is dropped (its locks are in doubt, and the server
// releases them with it).
func (s *Store) finishReleasing(ctx context.Context, end echogate.TurnEnd) (turnErr, eventErr error, ok bool) {
	p, err := s.conns(ctx)
	if err != nil || p.mux == nil {
		return nil, nil, false
	}
	h := p.mux.holding(end.Session)
	if h == nil {
		return nil, nil, false
	}
	b := &pgx.Batch{}
	b.Queue(sessionXactLockSQL, string(end.Session))
	if err := s.queueFinish(b, end); err != nil {
		return nil, nil, false
	}
	b.Queue(sessionUnlockSQL, string(end.Session))
	ids := make([]int64, len(end.Usage))

	l := h.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.released || l.gen != h.gen || l.conn == nil {
		return nil, nil, false
	}
	// Like the lock's own round trips, not cut by ctx: a cancelled batch would leave the
	// connection, and the other sessions' locks on it, in doubt.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
	defer cancel()
	br := l.conn.SendBatch(qctx, b)
	turnErr, eventErr, released, err := readReleasing(br, end, ids)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Rolled back: nothing was written and the session-level hold is still there (the
		// release never ran). The caller writes the end apart and the lock's unlock gives it
		// back. Only a broken connection leaves its locks in doubt: it is dropped.
		s.log.Warn("postgres: finish turn on the session's lock connection failed; the end is written apart",
			"session", string(end.Session), "turn", end.Turn.ID, "err", err)
		if !isServerError(err) {
			l.drop()
		}
		return nil, nil, false
	}
	h.released = true
	if !released {
		// Written, but the lock was not held on its connection: what else it holds is in doubt.
		s.log.Warn("postgres: the session's lock was not held on its connection at the turn's end; its locks are given back",
			"session", string(end.Session), "turn", end.Turn.ID)
		l.drop()
	}
	setUsageIDs(end, ids)
	return turnErr, eventErr, true
}

// readReleasing reads finishReleasing's batch: the transaction-level lock, the end's
// statements, the release (released: the session-level hold was there to give back).
func readReleasing(br pgx.BatchResults, end echogate.TurnEnd, ids []int64) (turnErr, eventErr error, released bool, err error) {
	if _, err := br.Exec(); err != nil {
		return nil, nil, false, fmt.Errorf("take the session's lock for the end's transaction: %w", err)
	}
	if turnErr, eventErr, err = readFinish(br, end, ids); err != nil {
		return nil, nil, false, err
	}
	if err := br.QueryRow().Scan(&released); err != nil {
		return nil, nil, false, fmt.Errorf("release the session's lock: %w", err)
	}
	return turnErr, eventErr, released, nil
}

// isServerError tells an error the server answered (the connection is still in step: a failed
// batch was rolled back at its Sync) from one that leaves the connection in doubt.
func isServerError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}
