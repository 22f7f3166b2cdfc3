package sqlite

// The store's lifecycle: connection strings per role, Open (the two files' writers,
// checkpointers and read pools), Ping and Close.

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

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
		// per HistorySince / LatestCheckpoint).
		q = append(q, "_query_only=1", "_pragma=cache_size(-"+strconv.Itoa(readerCacheKiB)+")")
	case roleVectorReader:
		// Exact vector scans of the memory and knowledge tables read every embedding: their
		// readers map the file (up to 256 MiB of address space, shared page cache, nothing
		// copied), so a scan reads the pages in place instead of copying each one.
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
