package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
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

// lockTimeout bounds one round trip of a lock lane (lane.go); past it the connection is closed
// instead, which releases its locks server-side.
const lockTimeout = 5 * time.Second

// TryLockSession tries to take the cluster-wide lock of one session, so that across replicas only
// one runs the session's turns at a time. It never waits for the lock: ok is false when another
// holder (another replica, or another caller in this process) has it. It blocks for one round
// trip on the session's lock connection (bounded by lockTimeout), shared with the other work
// waiting for that connection (lane.go), and while the connection's previous round trip is in
// flight; a ctx that ended before the round trip returns its error, one that ends during it
// returns its error after releasing the lock just taken.
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
	op := &lockOp{key: key, rd: rd, scan: scanGot, sql: sessionTryLockSQL, args: []any{string(key)}}
	if err := l.do(ctx, op); err != nil || !op.got {
		m.release(key)
		if err != nil {
			return noop, false, fail(ctx, err, "lock session %q", key)
		}
		return noop, false, nil
	}
	h := &heldLock{lane: l, gen: op.gen}
	if ctx.Err() != nil {
		// The caller left meanwhile: give the lock back at once.
		_ = l.do(context.Background(), &unlockOp{h: h, key: key})
		m.release(key)
		return noop, false, ctx.Err()
	}
	return s.held(m, h, key), true, nil
}

// held records key's lock h as this store's, and returns its unlock: safe to call more than
// once and from any goroutine.
func (s *Store) held(m *lockMux, h *heldLock, key echogate.SessionKey) (unlock func()) {
	m.hold(key, h)
	var once sync.Once
	return func() {
		once.Do(func() {
			op := &unlockOp{h: h, key: key}
			err := h.lane.do(context.Background(), op)
			if err == nil && op.notHeld {
				err = errors.New("the lock was not held on its connection")
			}
			if err != nil && !errors.Is(err, errLaneClosed) {
				s.log.Warn("postgres: session unlock failed",
					"session", string(key), "err", err)
			}
			m.release(key)
		})
	}
}

// heldLock is a session lock this store holds: its lane, the lane connection's generation it
// was taken in, and whether a turn's end gave it back already (finishReleasing; read and
// written on the lane's goroutine only).
type heldLock struct {
	lane     *lockLane
	gen      uint64
	released bool
}

// lockMux holds the lock connections and the sessions this store has locked.
type lockMux struct {
	lanes
	mu   sync.Mutex
	held map[echogate.SessionKey]*heldLock // nil while being taken
}

func newLockMux(pool *pgxpool.Pool, n int) *lockMux {
	return &lockMux{lanes: newLanes(pool, n, false), held: map[echogate.SessionKey]*heldLock{}}
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

// lockOp takes a session's lock on its lane, with the read of its paused turn when rd is set:
// TryLockSession's (sql sessionTryLockSQL, scan scanGot) and ClaimEventLocking's (qClaimLock,
// scanClaim) round trip.
type lockOp struct {
	key  echogate.SessionKey
	rd   *pendingRead
	scan func(pgx.Row) (bool, error)
	sql  string
	args []any
	// lease: the lock is a lease row (through a pooler), taken and rolled back with its
	// transaction, not an advisory lock.
	lease bool
	// The outcome: the lock taken, on the connection of generation gen; first for a claim.
	got   bool
	first bool
	gen   uint64
}

func (o *lockOp) start(*lockLane) bool { return true }

func (o *lockOp) queue(b *pgx.Batch) { queueLockRead(b, o.key, o.rd, o.sql, o.args...) }

func (o *lockOp) read(br pgx.BatchResults) (err error) {
	o.got, err = readLockRead(br, o.rd, o.scan)
	return err
}

func (o *lockOp) locks() echogate.SessionKey {
	if o.lease {
		return "" // rolled back with its group
	}
	return o.key
}

func (o *lockOp) releases() echogate.SessionKey { return "" }
func (o *lockOp) readRelease(bool)              {}

func (o *lockOp) done(l *lockLane, gen uint64, err error) (drop bool) {
	o.gen = gen
	if err == nil {
		return false
	}
	o.got, o.first = false, false
	if o.lease || !isServerError(err) {
		return false // the lane dropped the connection, and the lock with it
	}
	// Refused alone and rolled back: the lock, taken first, may still be held (session-level):
	// give it back, or drop the connection when that fails too.
	_, rerr := l.release(o.key)
	return rerr != nil
}

// unlockOp gives back a session's lock h, after the other ops of its group: nothing when a
// turn's end released it already or the connection it was taken on is gone.
type unlockOp struct {
	h       *heldLock
	key     echogate.SessionKey
	notHeld bool
}

func (o *unlockOp) start(l *lockLane) bool {
	// Released with a turn's end, or the connection broke or was closed: the server released
	// the lock then.
	return !o.h.released && l.gen == o.h.gen && l.conn != nil
}

func (o *unlockOp) queue(*pgx.Batch)              {}
func (o *unlockOp) read(pgx.BatchResults) error   { return nil }
func (o *unlockOp) locks() echogate.SessionKey    { return "" }
func (o *unlockOp) releases() echogate.SessionKey { return o.key }
func (o *unlockOp) readRelease(released bool)     { o.notHeld = !released }

func (o *unlockOp) done(_ *lockLane, _ uint64, err error) (drop bool) {
	// A failed unlock leaves the connection unusable, and its other locks in doubt.
	return err != nil
}
