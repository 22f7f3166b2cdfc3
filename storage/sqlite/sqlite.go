// Package sqlite is the embedded default store of the gateway (pure Go driver modernc.org/sqlite,
// no cgo): one SQLite file holding sessions, transcripts, turns, the usage ledger, paused turns,
// tool grants, memory and knowledge, and next to it the event log (EventsPath: the dedupe
// record of inbound events), which every turn writes twice and which therefore commits on a
// writer of its own, in parallel with the main file's.
//
// It implements pipeline.Store (and is checked by storage/storagetest) without importing pipeline.
//
// # Lifecycle
//
//	st, err := sqlite.New(sqlite.Config{Path: "./data/echogate.db"}, log) // validates only
//	err = st.Open(ctx)    // creates the directory, opens both files in WAL mode
//	err = st.Migrate(ctx) // applies embedded migrations; safe at every start
//	...
//	err = st.Close()
//
// # Concurrency
//
// The database is opened through a single writer connection and a pool of read-only
// connections that read concurrently under WAL (the exact vector scans have a small read pool
// of their own, which maps the file; see roleVectorReader). Every write call is queued to one writer
// goroutine that owns the write connection and commits with group commit: the calls queued
// while one transaction commits run together in the next one, each in its own SAVEPOINT (so a
// failing call rolls back alone). Writers therefore never spin on SQLITE_BUSY, and a burst of
// writes pays for one commit instead of one each (see writer.go). A batch runs without
// savepoints unless one of its calls fails; then it runs again with them. WAL checkpoints run
// on a connection of their own (checkpointer.go), so a commit never waits for one. A write that
// has returned is committed and visible to every read that starts after it. Other processes
// (the `echogate` CLI next to a running server) share the file through SQLite's locks;
// BusyTimeout bounds how long a write waits for them.
//
// Durability: synchronous=NORMAL (the default) in WAL mode never corrupts the database, but a
// power loss or OS crash may lose the last transactions before the next checkpoint. Set
// Config.Synchronous to "full" to fsync every commit instead.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// EventsPath returns the event log's file for the database at path: the same name with
// "-events" before the extension ("data/echogate.db" → "data/echogate-events.db").
func EventsPath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-events" + ext
}

// logReadConns is the event log's read pool: point lookups and the replay sweep.
const logReadConns = 2

// DefaultPath is the database file used when Config.Path is empty.
const DefaultPath = "./data/echogate.db"

// Defaults applied to a zero Config.
const (
	DefaultBusyTimeout = 5 * time.Second
	minReadConns       = 4
	maxReadConns       = 64
)

// Config configures the store. The zero value opens DefaultPath with the defaults below.
type Config struct {
	// Path of the database file; its directory is created by Open. Default DefaultPath.
	// A plain file path: SQLite URIs ("file:…"), query strings and ":memory:" are rejected
	// (readers and the writer are separate connections and must share one file).
	Path string
	// BusyTimeout is how long a statement waits for a lock held by another process before
	// failing with "database is locked". Default 5s; negative is invalid.
	BusyTimeout time.Duration
	// ReadConns is the size of the read-only connection pool. Default max(4, GOMAXPROCS),
	// at most 64.
	ReadConns int
	// Synchronous is "normal" (default: fast, durable across process crashes) or "full"
	// (fsync every commit: also durable across power loss).
	Synchronous string
	// Now is the clock used for timestamps the caller left zero. Default time.Now.
	Now func() time.Time
}

// Store is the SQLite store. Its methods are safe for concurrent use once Open has returned.
type Store struct {
	path        string
	eventsPath  string
	busyTimeout time.Duration
	readConns   int
	synchronous string
	now         func() time.Time
	log         *slog.Logger

	mu     sync.Mutex // serializes Open and Close
	st     atomic.Pointer[dbs]
	cps    cpIndex // sessions with compression checkpoints (cpindex.go)
	closed atomic.Bool
}

// dbs are the open connection pools of one database file, its writer and checkpointer, and
// the readers' prepared statements. The main database's dbs also hold the event log's (ev).
type dbs struct {
	path   string
	ev     *dbs // the event log (only on the main database's)
	w, r   *sql.DB
	v      *sql.DB // vector-scan readers (main database only; see roleVectorReader)
	wr     *writer // owns w's only connection
	cp     *checkpointer
	rStmts sync.Map // query -> *sql.Stmt on r
	vStmts sync.Map // query -> *sql.Stmt on v
}

// New validates cfg and returns a store that is not open yet. It does no I/O. log may be nil
// (logging is then discarded).
func New(cfg Config, log *slog.Logger) (*Store, error) {
	s := &Store{
		path:        cfg.Path,
		busyTimeout: cfg.BusyTimeout,
		readConns:   cfg.ReadConns,
		synchronous: strings.ToLower(strings.TrimSpace(cfg.Synchronous)),
		now:         cfg.Now,
		log:         log,
	}
	if s.path == "" {
		s.path = DefaultPath
	}
	switch {
	case s.path == ":memory:" || strings.HasPrefix(s.path, "file:"):
		return nil, fmt.Errorf("sqlite: config path %q: %w: use a plain file path such as %q (an in-memory database cannot be shared by the store's connections)", cfg.Path, ErrInvalid, DefaultPath)
	case strings.ContainsAny(s.path, "?\x00"):
		return nil, fmt.Errorf("sqlite: config path %q: %w: it must not contain '?' or NUL; connection options are set through Config fields", cfg.Path, ErrInvalid)
	case strings.HasSuffix(s.path, "/") || strings.HasSuffix(s.path, string(filepath.Separator)):
		return nil, fmt.Errorf("sqlite: config path %q: %w: it names a directory; add a file name such as %q", cfg.Path, ErrInvalid, filepath.Join(s.path, "echogate.db"))
	}
	abs, err := filepath.Abs(s.path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: config path %q: %w: %w", cfg.Path, ErrInvalid, err)
	}
	s.path = abs
	s.eventsPath = EventsPath(abs)
	switch {
	case s.busyTimeout < 0:
		return nil, fmt.Errorf("sqlite: config busy timeout %s: %w: must be >= 0 (0 means the default %s)", cfg.BusyTimeout, ErrInvalid, DefaultBusyTimeout)
	case s.busyTimeout == 0:
		s.busyTimeout = DefaultBusyTimeout
	}
	switch {
	case s.readConns < 0 || s.readConns > maxReadConns:
		return nil, fmt.Errorf("sqlite: config read conns %d: %w: must be between 0 (default) and %d", cfg.ReadConns, ErrInvalid, maxReadConns)
	case s.readConns == 0:
		s.readConns = max(minReadConns, min(runtime.GOMAXPROCS(0), maxReadConns))
	}
	switch s.synchronous {
	case "":
		s.synchronous = "normal"
	case "normal", "full":
	default:
		return nil, fmt.Errorf("sqlite: config synchronous %q: %w: use \"normal\" or \"full\"", cfg.Synchronous, ErrInvalid)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// conns returns the open pools, or why there are none, or ctx's error.
func (s *Store) conns(ctx context.Context) (*dbs, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := s.st.Load()
	if d == nil {
		if s.closed.Load() {
			return nil, ErrClosed
		}
		return nil, ErrNotOpen
	}
	return d, nil
}

// evConns returns the event log's pools (see Config), or why there are none, or ctx's error.
func (s *Store) evConns(ctx context.Context) (*dbs, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, err
	}
	return d.ev, nil
}

// stmt returns the prepared statement for query on db, preparing and caching it on first use.
// Statements are prepared lazily because the tables exist only after Migrate.
func stmt(ctx context.Context, db *sql.DB, cache *sync.Map, query string) (*sql.Stmt, error) {
	if v, ok := cache.Load(query); ok {
		return v.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if v, loaded := cache.LoadOrStore(query, st); loaded {
		_ = st.Close()
		return v.(*sql.Stmt), nil
	}
	return st, nil
}

// read returns query prepared on the read pool.
func (d *dbs) read(ctx context.Context, query string) (*sql.Stmt, error) {
	return stmt(ctx, d.r, &d.rStmts, query)
}

// scan returns query prepared on the vector-scan pool (mapped readers): for exact vector
// scans only, which read whole tables.
func (d *dbs) scan(ctx context.Context, query string) (*sql.Stmt, error) {
	return stmt(ctx, d.v, &d.vStmts, query)
}

// write runs fn in the writer's next transaction; see writer.go.
func (d *dbs) write(ctx context.Context, fn func(tx *wtx) error) error {
	return d.wr.do(ctx, false, fn)
}

// wrapCtx wraps err once for this layer: "sqlite: <op>: err". When ctx has ended, ctx.Err() is
// wrapped too, so errors.Is(err, context.Canceled) holds even when the driver reported the
// interruption in its own words.
func wrapCtx(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("sqlite: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// fail wraps err with the operation described by format and args (formatted only on failure).
func fail(ctx context.Context, err error, format string, args ...any) error {
	return wrapCtx(ctx, fmt.Sprintf(format, args...), err)
}

// Time columns hold UTC microseconds since the Unix epoch.

func toMicros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// optMicros maps a zero time to NULL.
func optMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromOptMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// stamp returns t, or the store clock's now when t is zero.
func (s *Store) stamp(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}

// sqlLimit maps "limit <= 0 means no limit" to SQLite's LIMIT -1.
func sqlLimit(limit int) int64 {
	if limit <= 0 {
		return -1
	}
	return int64(limit)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
