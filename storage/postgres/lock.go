package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// sessionLockSQL derives a 64-bit advisory lock key from the session key. hashtextextended is the
// 64-bit form of hashtext (PostgreSQL 11+), so unrelated sessions practically never share a key;
// the "echogate:session:" prefix keeps the keys apart from other users of advisory locks.
const (
	sessionTryLockSQL = `SELECT pg_try_advisory_lock(hashtextextended('echogate:session:' || $1, 0))`
	sessionUnlockSQL  = `SELECT pg_advisory_unlock(hashtextextended('echogate:session:' || $1, 0))`
)

// unlockTimeout bounds releasing a session lock; past it the connection is closed instead, which
// releases the lock server-side.
const unlockTimeout = 5 * time.Second

// TryLockSession tries to take the cluster-wide lock of one session, so that across replicas only
// one runs the session's turns at a time. It never waits for the lock: ok is false when another
// holder (another replica, or another caller in this process) has it. It does block while
// acquiring a connection from the lock pool (at most Config.MaxLockConns locks are held at once)
// and on the round trip; cancelling ctx stops both and returns an error.
//
// The lock is a session-level pg_advisory_lock held by a connection pinned from a pool of its
// own (so held locks never starve queries). unlock releases it and returns the connection; it is
// never nil, is safe to call more than once and from any goroutine, and must be called before
// Close. When ok is false or err is set, unlock is a no-op.
//
// Limits, for the caller: the lock lives as long as its connection. If the server or the network
// drops that connection, the lock is released server-side without the holder noticing, and another
// replica may take it; the unlock then logs and discards the connection. Treat the lock as a
// strong hint that prevents double work, with ClaimEvent staying the arbiter of "each event
// answered once". It does not work through PgBouncer in transaction mode.
func (s *Store) TryLockSession(ctx context.Context, key echogate.SessionKey) (unlock func(), ok bool, err error) {
	noop := func() {}
	if key == "" {
		return noop, false, fmt.Errorf("postgres: lock session: %w: empty key", ErrInvalid)
	}
	p, err := s.conns(ctx)
	if err != nil {
		return noop, false, fmt.Errorf("postgres: lock session %q: %w", key, err)
	}
	conn, err := p.locks.Acquire(ctx)
	if err != nil {
		return noop, false, fail(ctx, err, "lock session %q: acquire connection", key)
	}
	var got bool
	if err := conn.QueryRow(ctx, sessionTryLockSQL, string(key)).Scan(&got); err != nil {
		// The lock may have been granted just as ctx ended: closing the connection releases it.
		closeConn(conn)
		conn.Release()
		return noop, false, fail(ctx, err, "lock session %q", key)
	}
	if !got {
		conn.Release()
		return noop, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
			defer cancel()
			var released bool
			if err := conn.QueryRow(ctx, sessionUnlockSQL, string(key)).Scan(&released); err != nil || !released {
				// The connection broke (so the server already dropped the lock) or the lock was
				// somehow not held: do not return this connection to the pool.
				s.log.Warn("postgres: session unlock failed; discarding the lock connection",
					"session", string(key), "released", released, "err", err)
				closeConn(conn)
			}
			conn.Release()
		})
	}, true, nil
}
