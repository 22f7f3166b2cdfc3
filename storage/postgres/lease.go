package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echogate/echogate"
)

// Session leases: TryLockSession through a transaction pooler, where a session-level advisory
// lock would live on a server connection the pooler hands to other clients. A lease is a row of
// session_leases with its owner (one per Store) and an expiry by the database's clock. The owner
// renews all its leases in one statement every LeaseTTL/3 while it holds them; a lease whose
// owner died is taken over by the next TryLockSession after it expired. A row of this store's
// own that it does not hold (its release failed) is taken again at once: the store's held set,
// not the row, says whether one of its turns runs the session.
const (
	qTakeLease = `INSERT INTO session_leases AS l (session, owner, expires_at)
VALUES ($1, $2, now() + make_interval(secs => $3))
ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE l.expires_at < now() OR l.owner = excluded.owner
RETURNING l.session`
	qDropLease   = `DELETE FROM session_leases WHERE session = $1 AND owner = $2`
	qRenewLeases = `UPDATE session_leases SET expires_at = now() + make_interval(secs => $2)
WHERE owner = $1 AND session = ANY($3) RETURNING session`
)

// leaseOwner names one Store on its lease rows: host, pid and a random suffix (two stores in one
// process are two owners).
func leaseOwner() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// leaser holds this store's leases and renews them. Its goroutine is started by newLeaser and
// ends in close.
type leaser struct {
	s    *Store
	pool *pgxpool.Pool
	// The lanes carry a held session's work in shared round trips (lane.go), as the lock
	// connections do on a direct connection; a pooled lane takes a connection per round trip.
	lanes
	mu sync.Mutex
	// held are the sessions whose lease this store holds; true once a turn's end releases it
	// in its own transaction (setReleased), until the unlock forgets it.
	held map[echogate.SessionKey]bool
	stop chan struct{}
	done chan struct{}
}

func newLeaser(s *Store, pool *pgxpool.Pool, lanes int) *leaser {
	l := &leaser{s: s, pool: pool, lanes: newLanes(pool, lanes, true), held: map[echogate.SessionKey]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go l.renewLoop()
	return l
}

// tryLock takes key's lease: one round trip, which with rd also reads key's paused turn. ok is
// false when another owner holds an unexpired lease, or this store already holds it.
func (l *leaser) tryLock(ctx context.Context, key echogate.SessionKey, rd *pendingRead) (unlock func(), ok bool, err error) {
	noop := func() {}
	l.mu.Lock()
	if _, busy := l.held[key]; busy {
		l.mu.Unlock()
		return noop, false, nil
	}
	l.held[key] = false
	l.mu.Unlock()
	op := &lockOp{key: key, rd: rd, scan: scanLease, sql: qTakeLease, args: []any{string(key), l.s.owner, l.s.leaseTTL.Seconds()}, lease: true}
	err = l.lane(key).do(ctx, op)
	if err == nil && !op.got {
		l.forget(key)
		return noop, false, nil
	}
	if err != nil {
		l.forget(key)
		// A connection lost during the round trip leaves the insert's commit in doubt: give it
		// back rather than let it block the session until it expires.
		l.drop(key)
		return noop, false, err
	}
	return l.unlockFunc(key), true, nil
}

// qClaimLease claims an event and, only when the claim is the first, takes its session's lease
// as qTakeLease does, in one statement: whether the claim is the first, whether the lease was
// taken.
const qClaimLease = `WITH c AS (
  INSERT INTO events (key, payload, claimed_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING 1
), lease AS (
  INSERT INTO session_leases AS l (session, owner, expires_at)
  SELECT $4, $5, now() + make_interval(secs => $6) WHERE EXISTS (SELECT 1 FROM c)
  ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
  WHERE l.expires_at < now() OR l.owner = excluded.owner
  RETURNING l.session
)
SELECT EXISTS (SELECT 1 FROM c), EXISTS (SELECT 1 FROM lease)`

// claimLock is Store.ClaimEventLocking through a pooler: the claim and the session's lease in
// one statement, the paused turn's read after it, in one batch (one transaction, one round
// trip). A session this store holds already is claimed alone.
func (l *leaser) claimLock(ctx context.Context, key string, payload []byte, at time.Time, session echogate.SessionKey) (first bool, unlock func(), locked bool, pend *echogate.PendingTurn, err error) {
	noop := func() {}
	l.mu.Lock()
	if _, busy := l.held[session]; busy {
		l.mu.Unlock()
		var lane *lockLane
		if l.holds(session) {
			lane = l.lane(session)
		}
		first, err := l.s.claimOn(ctx, lane, key, payload, at)
		return first, noop, false, nil, err
	}
	l.held[session] = false
	l.mu.Unlock()
	rd := &pendingRead{}
	op := &lockOp{key: session, rd: rd, sql: qClaimLease, args: []any{key, payload, at, string(session), l.s.owner, l.s.leaseTTL.Seconds()}, lease: true}
	op.scan = scanClaim(&op.first)
	err = l.lane(session).do(ctx, op)
	first = op.first
	if err != nil || !op.got {
		l.forget(session)
		if err != nil {
			l.drop(session) // a connection lost mid-batch leaves its commit in doubt: give the lease back
			return false, noop, false, nil, fail(ctx, err, "claim event %q with the lease of session %q", key, session)
		}
		return first, noop, false, nil, nil
	}
	if rd.found {
		pend = &rd.pend
	}
	return true, l.unlockFunc(session), true, pend, nil
}

// unlockFunc is the unlock of key's lease, taken by this store: it deletes the row unless a
// turn's end did, and forgets the key; safe to call more than once.
func (l *leaser) unlockFunc(key echogate.SessionKey) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			if !l.released(key) {
				l.drop(key)
			}
			l.forget(key)
		})
	}
}

// holds reports whether this store holds key's lease (not released with a turn's end).
func (l *leaser) holds(key echogate.SessionKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	released, ok := l.held[key]
	return ok && !released
}

// setReleased records whether a turn's end deletes (or deleted) key's lease row in its own
// transaction: the unlock then has nothing to delete, and renewals skip it.
func (l *leaser) setReleased(key echogate.SessionKey, released bool) {
	l.mu.Lock()
	if _, ok := l.held[key]; ok {
		l.held[key] = released
	}
	l.mu.Unlock()
}

func (l *leaser) released(key echogate.SessionKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[key]
}

func (l *leaser) forget(key echogate.SessionKey) {
	l.mu.Lock()
	delete(l.held, key)
	l.mu.Unlock()
}

// drop deletes key's lease row if this store owns it, bounded by lockTimeout whatever the caller's
// context did; a failure leaves the row to expire.
func (l *leaser) drop(key echogate.SessionKey) {
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	op := &batchOp{
		q: func(b *pgx.Batch) { b.Queue(qDropLease, string(key), l.s.owner) },
		r: func(br pgx.BatchResults) error { _, err := br.Exec(); return err },
	}
	if err := l.lane(key).do(ctx, op); err != nil {
		l.s.log.Warn("postgres: release session lease failed; it expires on its own",
			"session", string(key), "ttl", l.s.leaseTTL, "err", err)
	}
}

// renewLoop renews the held leases every LeaseTTL/3 until close.
func (l *leaser) renewLoop() {
	defer close(l.done)
	t := time.NewTicker(max(l.s.leaseTTL/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if err := l.renew(); err != nil {
				l.s.log.Warn("postgres: renew session leases failed; retrying", "err", err)
			}
		}
	}
}

// renew extends every lease this store holds, in one statement, and logs the ones it lost (its
// renewals failed for longer than the TTL and another replica took the session over).
func (l *leaser) renew() error {
	l.mu.Lock()
	keys := make([]string, 0, len(l.held))
	for k, released := range l.held {
		if !released {
			keys = append(keys, string(k))
		}
	}
	l.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	rows, err := l.pool.Query(ctx, qRenewLeases, l.s.owner, l.s.leaseTTL.Seconds(), keys)
	if err != nil {
		return fmt.Errorf("renew %d leases: %w", len(keys), err)
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("renew %d leases: %w", len(keys), err)
	}
	if len(renewed) == len(keys) {
		return nil
	}
	got := make(map[string]bool, len(renewed))
	for _, k := range renewed {
		got[k] = true
	}
	for _, k := range keys {
		if got[k] {
			continue
		}
		if l.holds(echogate.SessionKey(k)) {
			l.s.log.Warn("postgres: session lease lost (renewals failed past its expiry); another replica may run the session",
				"session", k, "ttl", l.s.leaseTTL)
		}
	}
	return nil
}

// close stops the renewals and waits for the loop to end. Leases still held expire on their own.
func (l *leaser) close() {
	close(l.stop)
	<-l.done
	l.lanes.close()
}
