package postgres

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echogate/echogate"
)

// sessionLockSQL derives a 64-bit advisory lock key from the session key. hashtextextended is the
// 64-bit form of hashtext (PostgreSQL 11+), so unrelated sessions practically never share a key;
// the "echogate:session:" prefix keeps the keys apart from other users of advisory locks.
const (
	sessionTryLockSQL = `SELECT pg_try_advisory_lock(hashtextextended('echogate:session:' || $1, 0))`
	sessionUnlockSQL  = `SELECT pg_advisory_unlock(hashtextextended('echogate:session:' || $1, 0))`
)

// lockTimeout bounds taking or releasing a session lock on its connection; past it the
// connection is closed instead, which releases its locks server-side.
const lockTimeout = 5 * time.Second

// TryLockSession tries to take the cluster-wide lock of one session, so that across replicas only
// one runs the session's turns at a time. It never waits for the lock: ok is false when another
// holder (another replica, or another caller in this process) has it. It blocks for one round
// trip on the session's lock connection (bounded by lockTimeout), and while another lock or
// unlock of the same connection is in flight; a ctx that ended before the round trip returns
// its error, one that ends during it returns its error after releasing the lock just taken.
//
// The lock is a session-level pg_advisory_lock. Locks are multiplexed over Config.MaxLockConns
// connections pinned from a pool of their own (so held locks never starve queries): a session
// always maps to the same connection, which holds the locks of many sessions at once, so the
// number of turns running at once is not bounded by the number of connections. unlock releases
// the lock; it is never nil, is safe to call more than once and from any goroutine, and must be
// called before Close. When ok is false or err is set, unlock is a no-op.
//
// Limits, for the caller: the lock lives as long as its connection. If the server or the network
// drops that connection, the locks on it are released server-side without their holders noticing,
// and another replica may take them; the connection is replaced at its next use, and an unlock of
// a lock that lived on it does nothing. Treat the lock as a strong hint that prevents double work,
// with ClaimEvent staying the arbiter of "each event answered once".
//
// Through a transaction pooler (Config.Pooler "transaction") the lock is a lease row instead
// (lease.go): one round trip to take it, one to give it back, renewed in the background while
// held, and taken over by another replica LeaseTTL after its owner stopped renewing it.
func (s *Store) TryLockSession(ctx context.Context, key echogate.SessionKey) (unlock func(), ok bool, err error) {
	return s.tryLockSession(ctx, key, nil)
}

// tryLockSession is TryLockSession, reading the session's paused turn into rd in the same round
// trip when rd is not nil (TryLockSessionPending).
func (s *Store) tryLockSession(ctx context.Context, key echogate.SessionKey, rd *pendingRead) (unlock func(), ok bool, err error) {
	noop := func() {}
	if key == "" {
		return noop, false, fmt.Errorf("postgres: lock session: %w: empty key", ErrInvalid)
	}
	p, err := s.conns(ctx)
	if err != nil {
		return noop, false, fmt.Errorf("postgres: lock session %q: %w", key, err)
	}
	if p.leases != nil {
		unlock, ok, err := p.leases.tryLock(ctx, key, rd)
		if err != nil {
			return noop, false, fail(ctx, err, "lock session %q", key)
		}
		return unlock, ok, nil
	}
	m := p.mux
	// A second caller in this process is refused here: advisory locks are re-entrant on one
	// connection, so PostgreSQL would grant it.
	if !m.reserve(key) {
		return noop, false, nil
	}
	l := m.lane(key)
	gen, got, err := l.tryLock(ctx, m.pool, key, rd)
	if err != nil || !got {
		m.release(key)
		if err != nil {
			return noop, false, fail(ctx, err, "lock session %q", key)
		}
		return noop, false, nil
	}
	return s.held(m, l, gen, key), true, nil
}

// held records key's lock, taken on l in generation gen, as this store's, and returns its
// unlock: safe to call more than once and from any goroutine.
func (s *Store) held(m *lockMux, l *lockLane, gen uint64, key echogate.SessionKey) (unlock func()) {
	h := &heldLock{lane: l, gen: gen}
	m.hold(key, h)
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := l.unlock(h, key); err != nil {
				s.log.Warn("postgres: session unlock failed",
					"session", string(key), "err", err)
			}
			m.release(key)
		})
	}
}

// heldLock is a session lock this store holds: its lane, the lane connection's generation it
// was taken in, and whether a turn's end gave it back already (finishReleasing; under the
// lane's mu).
type heldLock struct {
	lane     *lockLane
	gen      uint64
	released bool
}

// lockMux holds the lock connections and the sessions this store has locked.
type lockMux struct {
	pool  *pgxpool.Pool
	seed  maphash.Seed
	lanes []lockLane
	mu    sync.Mutex
	held  map[echogate.SessionKey]*heldLock // nil while being taken
}

func newLockMux(pool *pgxpool.Pool, lanes int) *lockMux {
	return &lockMux{pool: pool, seed: maphash.MakeSeed(), lanes: make([]lockLane, max(lanes, 1)), held: map[echogate.SessionKey]*heldLock{}}
}

func (m *lockMux) lane(key echogate.SessionKey) *lockLane {
	return &m.lanes[maphash.String(m.seed, string(key))%uint64(len(m.lanes))]
}

// reserve marks key as locked by this store; false when it already is.
func (m *lockMux) reserve(key echogate.SessionKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.held[key]; ok {
		return false
	}
	m.held[key] = nil
	return true
}

// hold records the lock taken for key, reserved before.
func (m *lockMux) hold(key echogate.SessionKey, h *heldLock) {
	m.mu.Lock()
	m.held[key] = h
	m.mu.Unlock()
}

// holding is key's lock as this store holds it; nil when it does not (or is still taking it).
func (m *lockMux) holding(key echogate.SessionKey) *heldLock {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[key]
}

func (m *lockMux) release(key echogate.SessionKey) {
	m.mu.Lock()
	delete(m.held, key)
	m.mu.Unlock()
}

// close gives the lock connections back closed, which drops any lock still held on them.
func (m *lockMux) close() {
	for i := range m.lanes {
		l := &m.lanes[i]
		l.mu.Lock()
		l.drop()
		l.mu.Unlock()
	}
}

// lockLane is one pinned connection and the locks on it; its queries run one at a time.
type lockLane struct {
	mu   sync.Mutex
	conn *pgxpool.Conn // nil until first used, and after it broke
	gen  uint64        // bumped whenever conn is dropped: locks of an older gen are gone
}

// tryLock takes key's lock on the lane's connection (acquired first if needed) and returns the
// connection's generation; with rd it reads key's paused turn in the same round trip.
func (l *lockLane) tryLock(ctx context.Context, pool *pgxpool.Pool, key echogate.SessionKey, rd *pendingRead) (uint64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ready(ctx, pool); err != nil {
		return 0, false, err
	}
	// The round trip is not cut by ctx: a cancelled query would leave the connection (and the
	// other sessions' locks on it) in doubt.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
	defer cancel()
	got, err := lockAndRead(qctx, l.conn, key, rd, scanGot, sessionTryLockSQL, string(key))
	if err != nil {
		l.drop()
		return 0, false, err
	}
	if got && ctx.Err() != nil {
		// The caller left meanwhile: give the lock back at once.
		if released, err := l.release(qctx, key); err != nil || !released {
			l.drop()
		}
		return 0, false, ctx.Err()
	}
	return l.gen, got, nil
}

// ready checks ctx and gives the lane its connection (acquired from pool if it has none);
// l.mu is held.
func (l *lockLane) ready(ctx context.Context, pool *pgxpool.Pool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.conn == nil {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		l.conn = c
	}
	return nil
}

// release gives back key's lock on the lane's connection (l.mu held): released is false when
// the connection did not hold it.
func (l *lockLane) release(ctx context.Context, key echogate.SessionKey) (released bool, err error) {
	err = l.conn.QueryRow(ctx, sessionUnlockSQL, string(key)).Scan(&released)
	return released, err
}

// unlock releases key's lock h; nothing when a turn's end released it already or when the
// connection it was taken on is gone.
func (l *lockLane) unlock(h *heldLock, key echogate.SessionKey) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.released || l.gen != h.gen || l.conn == nil {
		return nil // released with a turn's end, or the connection broke or was closed: the server released the lock then
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	var released bool
	if err := l.conn.QueryRow(ctx, sessionUnlockSQL, string(key)).Scan(&released); err != nil {
		l.drop() // the connection is unusable; its other locks are in doubt too
		return err
	}
	if !released {
		return fmt.Errorf("the lock was not held on its connection")
	}
	return nil
}

// drop closes the lane's connection (releasing its locks server-side) and returns it to the
// pool. Called with l.mu held.
func (l *lockLane) drop() {
	if l.conn == nil {
		return
	}
	closeConn(l.conn)
	l.conn.Release()
	l.conn = nil
	l.gen++
}
