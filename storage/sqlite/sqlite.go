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
// writes pays for one commit instead of one each (see writer.go; BenchmarkTurnWrites went from
// about 1.8k to 6-8k turns/s on 2 cores). A batch runs without savepoints unless one of its
// calls fails; then it runs again with them (about +10% more). WAL checkpoints run on a
// connection of their own (checkpointer.go), so a commit never waits for one (10-11k turns/s). A write that has returned is committed and visible to
// every read that starts after it. Other processes (the `echogate` CLI next to a running
// server) share the file through SQLite's locks; BusyTimeout bounds how long a write waits for
// them.
//
// Durability: synchronous=NORMAL (the default) in WAL mode never corrupts the database, but a
// power loss or OS crash may lose the last transactions before the next checkpoint. Set
// Config.Synchronous to "full" to fsync every commit instead.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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

// Page cache bounds per connection, KiB. SQLite's pages live in the C heap of the embedded
// library (modernc.org/libc), outside the Go heap, until ReleaseMemory or the connection's
// close. The connections' caches share one LRU (the library is built with
// SQLITE_ENABLE_MEMORY_MANAGEMENT), bounded by the sum of their bounds, so one connection's
// pages can take another's share; and each 4 KiB page with its header takes an 8 KiB slot of
// the allocator (a writer's full 2 MiB cache is ~3.9 MiB resident), so the resident bound is
// about twice the sum (two writers, the readers, two checkpointers). Misses are reads of the
// file through the OS page cache.
const (
	writerCacheKiB = 2048
	readerCacheKiB = 1024
	// readerIdleTime closes a read connection unused for that long, and with it its cache
	// and prepared statements: after a burst the pool shrinks back to what the traffic uses.
	readerIdleTime = 30 * time.Second
)

// Connection roles, for dsn.
const (
	roleWriter = iota
	roleReader
	roleVectorReader
	roleLogReader
	roleCheckpointer
)

// dsn builds the driver connection string for a connection role. Pragmas are applied by the
// driver to every new connection of the pool, so a connection the pool replaces gets them too.
func (s *Store) dsn(path string, role int) string {
	q := []string{
		"_busy_timeout=" + strconv.FormatInt(s.busyTimeout.Milliseconds(), 10),
		"_foreign_keys=1",
		"_synchronous=" + strings.ToUpper(s.synchronous),
	}
	switch role {
	case roleWriter:
		// WAL: readers never block the writer, nor the writer the readers. IMMEDIATE: a write
		// transaction takes the write lock at BEGIN, so it cannot fail half-way on a lock
		// upgrade when another process writes. The page cache (writerCacheKiB) keeps the hot
		// right-hand edges of the tables and indexes a turn appends to. Checkpoints run on the checkpointer's connection (checkpointer.go); SQLite's
		// own auto-checkpoint stays as a backstop at twice the size the writer restarts the log.
		// Statement journals (savepoints of a group commit that had a failing call) stay in
		// memory.
		q = append(q, "_journal_mode=WAL", "_txlock=immediate", "_pragma=cache_size(-"+strconv.Itoa(writerCacheKiB)+")",
			"_pragma=wal_autocheckpoint("+strconv.Itoa(2*restartFrames)+")", "_pragma=temp_store(MEMORY)")
	case roleReader, roleLogReader:
		// Point lookups and short range reads (transcript, turns, checkpoints): no mapping.
		// SQLite drops a reader's mapping at the start of every read transaction after another
		// connection committed, which on the turn path is every turn (an munmap and a remap
		// per HistorySince / LatestCheckpoint, 1.4-3.9% of serve's CPU).
		q = append(q, "_query_only=1", "_pragma=cache_size(-"+strconv.Itoa(readerCacheKiB)+")")
	case roleVectorReader:
		// Exact vector scans of the memory and knowledge tables read every embedding: their
		// readers map the file (up to 256 MiB of address space, shared page cache, nothing
		// copied), which halves a scan (bench/vectors, 10k × 1536: p50 54 ms → 27 ms).
		// Their page cache holds what the mapping cannot serve: pages newer in the WAL.
		q = append(q, "_query_only=1", "_pragma=mmap_size(268435456)", "_pragma=cache_size(-"+strconv.Itoa(readerCacheKiB)+")")
	case roleCheckpointer:
		q = append(q, "_pragma=wal_autocheckpoint(0)", "_pragma=cache_size(-"+strconv.Itoa(readerCacheKiB)+")")
	}
	return path + "?" + strings.Join(q, "&")
}

// Open creates the database directory and file if needed and opens the connection pools. It
// blocks on file-system I/O; ctx bounds waiting for locks held by another process. It does not
// migrate: call Migrate next. Calling Open on an open or closed store is an error.
func (s *Store) Open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.st.Load() != nil {
		return fmt.Errorf("sqlite: open %s: already open", s.path)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("sqlite: open %s: create directory: %w", s.path, err)
	}
	// The event log opens while the main database does: each creates its file and switches
	// it to WAL (a few fsyncs) on a fresh data dir.
	type opened struct {
		d   *dbs
		err error
	}
	evc := make(chan opened, 1)
	go func() {
		d, err := s.openDB(ctx, s.eventsPath, roleLogReader, logReadConns)
		evc <- opened{d, err}
	}()
	main, err := s.openDB(ctx, s.path, roleReader, s.readConns)
	evo := <-evc
	if err != nil || evo.err != nil {
		if main != nil {
			_ = main.close()
		}
		if evo.d != nil {
			_ = evo.d.close()
		}
		return cmp.Or(err, evo.err)
	}
	// The vector-scan pool connects at the first vector search (sql.Open opens nothing): most
	// gateways never search vectors, and start-up does not pay for its connection.
	main.v, err = sql.Open("sqlite", s.dsn(s.path, roleVectorReader))
	if err != nil {
		_ = main.close()
		_ = evo.d.close()
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	vn := min(s.readConns, max(2, runtime.GOMAXPROCS(0)))
	main.v.SetMaxOpenConns(vn)
	main.v.SetMaxIdleConns(vn)
	main.v.SetConnMaxIdleTime(readerIdleTime)
	main.ev = evo.d
	s.st.Store(main)
	s.log.Debug("sqlite: opened", "path", s.path, "events_path", s.eventsPath, "read_conns", s.readConns)
	return nil
}

// openDB opens the writer, checkpointer and reader pools of the database file at path.
func (s *Store) openDB(ctx context.Context, path string, readRole, readConns int) (*dbs, error) {
	w, err := sql.Open("sqlite", s.dsn(path, roleWriter))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		_ = w.Close()
		return nil, fail(ctx, err, "open %s (is it an SQLite database, and writable?)", path)
	}
	if !strings.EqualFold(mode, "wal") {
		// WAL is refused on some file systems (network shares); the store still works, with
		// readers and the writer blocking each other.
		s.log.Warn("sqlite: WAL journal mode unavailable; concurrent reads will wait for writes",
			"path", path, "journal_mode", mode)
	}
	conn, err := w.Conn(ctx)
	if err != nil {
		_ = w.Close()
		return nil, fail(ctx, err, "open %s", path)
	}
	r, err := s.openReaders(ctx, path, readRole, readConns)
	if err != nil {
		_ = conn.Close()
		_ = w.Close()
		return nil, err
	}
	c, err := sql.Open("sqlite", s.dsn(path, roleCheckpointer))
	if err != nil {
		_ = r.Close()
		_ = conn.Close()
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	c.SetMaxOpenConns(1)
	c.SetMaxIdleConns(1)
	c.SetConnMaxLifetime(0)
	c.SetConnMaxIdleTime(0)
	cp := newCheckpointer(c, s.log)
	return &dbs{path: path, w: w, r: r, wr: newWriter(conn, s.log, cp), cp: cp}, nil
}

// openReaders opens a pool of n read connections of role to the file at path and checks that
// it can read.
func (s *Store) openReaders(ctx context.Context, path string, role, n int) (*sql.DB, error) {
	r, err := sql.Open("sqlite", s.dsn(path, role))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(readerIdleTime)
	if err := r.PingContext(ctx); err != nil {
		_ = r.Close()
		return nil, fail(ctx, err, "open %s (read pool)", path)
	}
	return r, nil
}

// Ping checks that the database file can be read and that the writer connection is available.
// It blocks until both answer or ctx ends; a write transaction in progress delays it.
func (s *Store) Ping(ctx context.Context) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	var n int
	if err := d.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		return wrapCtx(ctx, "ping (read)", err)
	}
	// A no-op write call to each writer: it is running and can take the write lock.
	if err := d.wr.do(ctx, false, func(*wtx) error { return nil }); err != nil {
		return wrapCtx(ctx, "ping (write)", err)
	}
	if err := d.ev.wr.do(ctx, false, func(*wtx) error { return nil }); err != nil {
		return wrapCtx(ctx, "ping (event log write)", err)
	}
	return nil
}

// Close stops the writer (queued write calls fail with ErrClosed; the running batch completes),
// runs PRAGMA optimize (bounded to a second) and closes the connection pools, waiting for reads
// in progress. Later calls of any method return ErrClosed; closing twice is not an error.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	d := s.st.Swap(nil)
	if d == nil {
		return nil
	}
	var errs []error
	if err := d.close(); err != nil {
		errs = append(errs, err)
	}
	if d.ev != nil {
		if err := d.ev.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close %s: %w", s.path, err)
	}
	return nil
}

// close stops the writer and the checkpointer and closes the pools of one database file.
func (d *dbs) close() error {
	d.wr.shutdown()
	var errs []error
	if err := d.cp.shutdown(); err != nil {
		errs = append(errs, err)
	}
	if err := d.wr.closeConn(); err != nil {
		errs = append(errs, err)
	}
	d.rStmts.Range(func(_, v any) bool {
		_ = v.(*sql.Stmt).Close()
		return true
	})
	if err := d.r.Close(); err != nil {
		errs = append(errs, err)
	}
	d.vStmts.Range(func(_, v any) bool {
		_ = v.(*sql.Stmt).Close()
		return true
	})
	if d.v != nil {
		if err := d.v.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := d.w.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", d.path, err)
	}
	return nil
}

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
