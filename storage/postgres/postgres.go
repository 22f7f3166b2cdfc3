// Package postgres is the PostgreSQL (+ pgvector) store of the gateway, selected by DATABASE_URL.
// It holds the same records as storage/sqlite (sessions, transcripts, the dedupe record of inbound
// events, turns, the usage ledger, paused turns and tool grants) with the same semantics, and is
// checked by the same conformance suite, storage/storagetest. It implements pipeline.Store without
// importing pipeline.
//
// # Lifecycle
//
//	st, err := postgres.New(postgres.Config{URL: os.Getenv("DATABASE_URL")}, log) // validates only
//	err = st.Open(ctx)    // builds the connection pools and checks the server answers
//	err = st.Migrate(ctx) // applies embedded migrations under an advisory lock; safe at every start
//	...
//	st.Close()
//
// Several replicas may start at once: Migrate serializes them with pg_advisory_lock, so each
// migration is applied exactly once.
//
// # pgvector
//
// The first migration runs CREATE EXTENSION IF NOT EXISTS vector, which needs a role allowed to
// create it (or an extension created beforehand by an administrator). Every pooled connection
// registers the pgvector types (vector, halfvec, sparsevec) with pgx when it connects, so
// pgvector.Vector values can be passed as arguments and scanned. A connection made before the
// extension exists (between Open and the first Migrate on a new database) skips the registration;
// Migrate resets the pool after applying migrations, so every later connection has the types.
//
// # Schemas
//
// By default the store uses the server's search_path (normally public). With Config.Schema set,
// Migrate creates that schema and every connection runs with search_path = <schema>, public: the
// tables live in the schema, and the vector extension is found either there or in public
// (install it into public when several echogate deployments share one database).
//
// # Connection poolers
//
// Connected directly (or through a pooler in session mode), the store uses named prepared
// statements (pgx's statement cache), session-level advisory locks (Migrate, TryLockSession) and
// LISTEN (RecentStops answers from notifications, stopwatch.go).
// Neither survives a pooler in transaction mode (PgBouncer's pool_mode = transaction, most managed
// databases' proxies), which hands each transaction to whichever server connection is free. With
// Config.Pooler = "transaction" (database.pooler) the store keeps no state on a connection beyond
// one transaction: statements are unnamed (pgx's describe cache), TryLockSession takes a lease row
// (lease.go) instead of an advisory lock, Migrate holds its lock as a transaction-scoped one in a
// transaction of its own, and RecentStops queries the table at each poll. Config.Schema needs search_path on every server connection, which
// PgBouncer 1.18 cannot carry: through a pooler, give echogate a database (or a role with
// ALTER ROLE … SET search_path) of its own instead.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/echogate/echogate/internal/lazyre"
)

// Defaults applied to a zero Config.
const (
	DefaultMaxConns        = 10
	DefaultMaxLockConns    = 8
	DefaultEfSearch        = 100
	DefaultConnectTimeout  = 10 * time.Second
	DefaultMaxConnLifetime = time.Hour
	DefaultMaxConnIdleTime = 30 * time.Minute
	DefaultLeaseTTL        = 10 * time.Second
	maxPoolConns           = 1000
)

// Pooler values of Config.Pooler.
const (
	PoolerNone        = "none"        // direct, or a pooler in session mode (the default)
	PoolerTransaction = "transaction" // a pooler in transaction mode (PgBouncer pool_mode = transaction)
)

var schemaRE = lazyre.New(`^[a-z_][a-z0-9_]{0,62}$`)

// Store is the PostgreSQL store. Its methods are safe for concurrent use once Open has returned.
type Store struct {
	poolCfg  *pgxpool.Config // query pool; AfterConnect registers the pgvector types
	lockCfg  *pgxpool.Config // TryLockSession pool; no type registration
	schema   string
	efSearch int    // hnsw.ef_search of nearest-neighbour queries
	target   string // host:port/db for logs and errors; never holds the password
	now      func() time.Time
	log      *slog.Logger
	pooled   bool          // Config.Pooler == "transaction"
	leaseTTL time.Duration // session leases (pooled only)
	owner    string        // this store's name on its leases

	mu     sync.Mutex // serializes Open and Close
	pools  atomic.Pointer[pools]
	closed atomic.Bool
}

type pools struct {
	q      *pgxpool.Pool // queries
	locks  *pgxpool.Pool // connections pinned by TryLockSession; nil when pooled
	mux    *lockMux      // the session locks on them (lock.go); nil when pooled
	leases *leaser       // the session leases (lease.go); nil unless pooled
	stops  *stopWatch    // RecentStops from LISTEN (stopwatch.go); nil when pooled
}

// parseReason extracts the reason from a pgx parse error without the connection string (which

// Target returns host:port/database of the configured server, for logs and diagnostics. It never
// contains credentials.
func (s *Store) Target() string { return s.target }

// registerVector is the pool's AfterConnect: it registers the pgvector types on a new connection
// when the extension exists and skips them otherwise (Migrate creates the extension, then resets
// the pool so that later connections register them).
func (s *Store) registerVector(ctx context.Context, c *pgx.Conn) error {
	var oid *uint32
	if err := c.QueryRow(ctx, "SELECT to_regtype('vector')::oid").Scan(&oid); err != nil {
		return fmt.Errorf("postgres: look up the vector type: %w", err)
	}
	if oid == nil {
		s.log.Debug("postgres: vector type not found on new connection; run Migrate to create the extension", "target", s.target)
		return nil
	}
	if err := pgxvec.RegisterTypes(ctx, c); err != nil {
		return fmt.Errorf("postgres: register pgvector types: %w", err)
	}
	return nil
}

// Open builds the connection pools and checks that the server answers (one round trip, bounded
// by ctx and the connect timeout). It does not migrate: call Migrate next. Calling Open on an open
// or closed store is an error. A server that is down fails Open; the caller decides to retry.
func (s *Store) Open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.pools.Load() != nil {
		return fmt.Errorf("postgres: open %s: already open", s.target)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: open %s: %w", s.target, err)
	}
	q, err := pgxpool.NewWithConfig(ctx, s.poolCfg)
	if err != nil {
		return fail(ctx, err, "open %s", s.target)
	}
	if err := q.Ping(ctx); err != nil {
		q.Close()
		return fail(ctx, err, "open %s (is the server up and the URL right?)", s.target)
	}
	if s.pooled {
		s.pools.Store(&pools{q: q, leases: newLeaser(s, q, int(s.lockCfg.MaxConns))})
		s.log.Debug("postgres: opened through a transaction pooler", "target", s.target, "max_conns", s.poolCfg.MaxConns)
		return nil
	}
	locks, err := pgxpool.NewWithConfig(ctx, s.lockCfg)
	if err != nil {
		q.Close()
		return fail(ctx, err, "open %s (lock pool)", s.target)
	}
	s.pools.Store(&pools{q: q, locks: locks, mux: newLockMux(locks, int(s.lockCfg.MaxConns)), stops: newStopWatch(s)})
	s.log.Debug("postgres: opened", "target", s.target, "schema", s.schema, "max_conns", s.poolCfg.MaxConns)
	return nil
}

// Ping checks that the server answers a query on a pooled connection. It blocks until it does or
// ctx ends.
func (s *Store) Ping(ctx context.Context) error {
	p, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	if err := p.q.Ping(ctx); err != nil {
		return fail(ctx, err, "ping %s", s.target)
	}
	return nil
}

// Close closes the connection pools. It waits for queries in progress; TryLockSession locks
// still held are released with their connections (call their unlock funcs first). Later calls
// of any method return ErrClosed; closing twice is not an error.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	p := s.pools.Swap(nil)
	if p == nil {
		return nil
	}
	if p.leases != nil {
		p.leases.close()
	} else {
		p.stops.close()
		p.mux.close()
		p.locks.Close()
	}
	p.q.Close()
	return nil
}

// WithConn runs fn on a connection of the query pool (with the pgvector types registered once the
// extension exists) and returns the connection afterwards. It is for diagnostics, tests and
// queries the typed methods do not cover; fn must not keep c. It blocks while the pool is
// exhausted; cancelling ctx stops waiting. fn's error is returned wrapped.
func (s *Store) WithConn(ctx context.Context, fn func(c *pgx.Conn) error) error {
	p, err := s.pool(ctx, "with conn")
	if err != nil {
		return err
	}
	c, err := p.Acquire(ctx)
	if err != nil {
		return fail(ctx, err, "with conn: acquire connection")
	}
	defer c.Release()
	if err := fn(c.Conn()); err != nil {
		return wrapCtx(ctx, "with conn", err)
	}
	return nil
}

// conns returns the open pools, or why there are none, or ctx's error.
func (s *Store) conns(ctx context.Context) (*pools, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := s.pools.Load()
	if p == nil {
		if s.closed.Load() {
			return nil, ErrClosed
		}
		return nil, ErrNotOpen
	}
	return p, nil
}

// pool returns the query pool, or an error wrapped for op.
func (s *Store) pool(ctx context.Context, op string) (*pgxpool.Pool, error) {
	p, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	return p.q, nil
}

// wrapCtx wraps err once for this layer: "postgres: <op>: err". When ctx has ended, ctx.Err() is
// wrapped too, so errors.Is(err, context.Canceled) holds even when pgx reported the interruption
// in its own words.
func wrapCtx(ctx context.Context, op string, err error) error {
	if isPoolerSymptom(err) {
		err = fmt.Errorf("%w (a transaction pooler such as PgBouncer in pool_mode = transaction between echogate and PostgreSQL? set database.pooler: transaction)", err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("postgres: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// fail wraps err with the operation described by format and args.
func fail(ctx context.Context, err error, format string, args ...any) error {
	return wrapCtx(ctx, fmt.Sprintf(format, args...), err)
}

// sendAtomic sends b on a connection of p as one implicit transaction, in one round trip once
// its statements are prepared: pgx ends a batch with a single Sync, and PostgreSQL runs the
// statements before a Sync as one transaction, rolled back as a whole when one of them fails
// (and the rest are then skipped). It saves the round trips of BEGIN and COMMIT that inTx costs.
// read consumes the results in order; an error of a statement is returned by the read of its
// result (and by Close). read must not fail for any other reason: the transaction has committed
// by the time Close returns.
func sendAtomic(ctx context.Context, p *pgxpool.Pool, b *pgx.Batch, read func(br pgx.BatchResults) error) error {
	br := p.SendBatch(ctx, b)
	if err := read(br); err != nil {
		_ = br.Close()
		return err
	}
	return br.Close()
}

// inTx runs fn in a read-committed transaction on the query pool and commits it, or rolls it back
// when fn or the commit fails.
func inTx(ctx context.Context, p *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, p, fn)
}

// Time columns are timestamptz: microsecond precision, returned in UTC.

// utc truncates t to the microseconds PostgreSQL keeps and drops the monotonic reading.
func utc(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// optTime maps a zero time to NULL.
func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// fromOpt maps a NULL time to the zero time.
func fromOpt(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// stamp returns t, or the store clock's now when t is zero.
func (s *Store) stamp(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}

// sqlLimit maps "limit <= 0 means no limit" to LIMIT NULL (= LIMIT ALL).
func sqlLimit(limit int) any {
	if limit <= 0 {
		return nil
	}
	return int64(limit)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// isPoolerSymptom reports whether err is what named prepared statements do through a transaction
// pooler: 42P05 (prepared statement already exists) or 26000 (… does not exist).
func isPoolerSymptom(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P05" || pe.Code == "26000")
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation (23505).
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
