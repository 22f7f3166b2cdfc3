package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// The writer owns the database's only write connection. Write calls are queued to it and run
// by one goroutine, with group commit: every call queued while a transaction commits is run in
// the next transaction, each inside its own SAVEPOINT, so one call's failure rolls back only its
// own changes, and the batch pays for one commit (WAL append and lock round trip) instead of
// one per call. A call returns only after the transaction that holds its changes committed, so
// read-your-writes holds for every reader that starts afterwards.
//
// Cancellation: a call whose ctx ends while it is queued is dropped and returns ctx's error;
// nothing of it is written. Once the writer has started a call's statements, the call finishes
// (within the batch, milliseconds) and reports the real outcome: statements of a shared
// transaction are never interrupted, because interrupting one would roll back its neighbours.

const (
	writeQueue = 4096 // queued write calls before callers block (back-pressure, bounded by ctx)
	maxBatch   = 256  // write calls per transaction
)

// A writeReq moves from queued to taken (the writer runs it) or abandoned (its caller left).
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type writeReq struct {
	ctx   context.Context
	solo  bool // run alone, outside the shared transaction; fn manages its own transaction
	fn    func(tx *wtx) error
	state atomic.Int32
	done  chan error // buffered(1)
}

type writer struct {
	conn  *sql.Conn
	log   *slog.Logger
	stmts map[string]*sql.Stmt // owned by the writer goroutine
	queue chan *writeReq
	stop  chan struct{} // closed by shutdown
	done  chan struct{} // closed when the goroutine has exited
	batch []*writeReq
	// enqueued, when set (tests only), is called after a call entered the queue. It is read
	// before the call is queued: calls already on their way when it is set are not reported.
	enqueued atomic.Pointer[func()]
}

func newWriter(conn *sql.Conn, log *slog.Logger) *writer {
	w := &writer{
		conn:  conn,
		log:   log,
		stmts: make(map[string]*sql.Stmt),
		queue: make(chan *writeReq, writeQueue),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		batch: make([]*writeReq, 0, maxBatch),
	}
	go w.run()
	return w
}

// wtx is what a write call's fn sees: statements on the writer connection, in the current
// transaction (or none, for solo calls).
type wtx struct {
	ctx context.Context
	w   *writer
}

func (t *wtx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.w.stmts[query]; ok {
		return st, nil
	}
	st, err := t.w.conn.PrepareContext(t.ctx, query)
	if err != nil {
		return nil, err
	}
	t.w.stmts[query] = st
	return st, nil
}

func (t *wtx) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(t.ctx, args...)
}

// queryRow runs a query returning one row and scans it into dest.
func (t *wtx) queryRow(query string, args []any, dest ...any) error {
	st, err := t.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(t.ctx, args...).Scan(dest...)
}

// rowsAffected runs query and returns the number of rows it changed.
func (t *wtx) rowsAffected(query string, args ...any) (int64, error) {
	res, err := t.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// do queues fn and waits for its outcome. It blocks while the queue is full and until the
// transaction holding fn's changes committed; see the cancellation rules above.
func (w *writer) do(ctx context.Context, solo bool, fn func(tx *wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, solo: solo, fn: fn, done: make(chan error, 1)}
	// Loaded before queueing, so a hook installed while this call waits is not told about it.
	hook := w.enqueued.Load()
	select {
	case w.queue <- req:
	case <-w.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if hook != nil {
		(*hook)()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		return <-req.done // taken: the batch finishes shortly
	case <-w.done:
		// The writer exited: it answered every call it took.
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ErrClosed
		}
		return <-req.done
	}
}

// shutdown stops taking calls, fails the queued ones with ErrClosed and waits for the
// goroutine to exit. Calls in the running batch complete first.
func (w *writer) shutdown() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *writer) run() {
	defer close(w.done)
	var next *writeReq // a solo call met while gathering a batch
	for {
		req := next
		next = nil
		if req == nil {
			select {
			case <-w.stop:
				w.drain()
				return
			case req = <-w.queue:
			}
		}
		if req.solo {
			w.runSolo(req)
			continue
		}
		w.batch = append(w.batch[:0], req)
	gather:
		for len(w.batch) < maxBatch {
			select {
			case r := <-w.queue:
				if r.solo {
					next = r
					break gather
				}
				w.batch = append(w.batch, r)
			default:
				break gather
			}
		}
		w.runBatch(w.batch)
		clear(w.batch)
	}
}

// drain fails every queued call after stop.
func (w *writer) drain() {
	for {
		select {
		case r := <-w.queue:
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				r.done <- ErrClosed
			}
		default:
			return
		}
	}
}

func (w *writer) runSolo(req *writeReq) {
	if !req.state.CompareAndSwap(reqQueued, reqTaken) {
		return
	}
	req.done <- req.fn(&wtx{ctx: req.ctx, w: w})
}

// runBatch runs the calls of batch in one transaction and answers each.
func (w *writer) runBatch(batch []*writeReq) {
	ctx := context.Background() // never interrupt a shared transaction; see above
	tx := &wtx{ctx: ctx, w: w}
	if _, err := tx.exec("BEGIN IMMEDIATE"); err != nil {
		// Typically "database is locked": another process held the write lock for longer
		// than the busy timeout. Nothing ran.
		for _, r := range batch {
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				r.done <- fmt.Errorf("begin transaction: %w", err)
			}
		}
		return
	}
	results := make([]error, len(batch)) // nil for calls that succeeded
	taken := make([]bool, len(batch))
	savepoints := len(batch) > 1
	var abort error // the transaction is unusable: everything rolls back
	for i, r := range batch {
		if !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue // its caller left
		}
		taken[i] = true
		if err := r.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if !savepoints {
			results[i] = r.fn(tx)
			if results[i] != nil {
				abort = results[i]
			}
			break
		}
		if _, err := tx.exec("SAVEPOINT w"); err != nil {
			abort = fmt.Errorf("savepoint: %w", err)
			break
		}
		if err := r.fn(tx); err != nil {
			results[i] = err
			if _, rerr := tx.exec("ROLLBACK TO w"); rerr != nil {
				// SQLite rolled back the whole transaction itself (I/O error, disk full).
				abort = fmt.Errorf("%w (transaction rolled back: %v)", err, rerr)
				break
			}
		}
		if _, err := tx.exec("RELEASE w"); err != nil {
			abort = fmt.Errorf("release savepoint: %w", err)
			break
		}
	}
	if abort == nil {
		if _, err := tx.exec("COMMIT"); err != nil {
			abort = fmt.Errorf("commit: %w", err)
		}
	}
	if abort != nil {
		if _, err := tx.exec("ROLLBACK"); err != nil && !isNoTransaction(err) {
			w.log.Error("sqlite: rollback failed", "err", err)
		}
		// The calls after the one that broke the transaction never ran. Answer them too: a
		// call left queued would wait for an answer until its ctx ended or the store closed
		// (forever, for a caller without a deadline).
		for i, r := range batch {
			if !taken[i] && r.state.CompareAndSwap(reqQueued, reqTaken) {
				taken[i] = true
				results[i] = fmt.Errorf("not run: %w", abort)
			}
		}
	}
	for i, r := range batch {
		if !taken[i] {
			continue
		}
		switch {
		case results[i] != nil:
			r.done <- results[i]
		case abort != nil:
			r.done <- abort
		default:
			r.done <- nil
		}
	}
}

// isNoTransaction reports the error of ROLLBACK when SQLite already rolled back.
func isNoTransaction(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "no transaction is active")
}

// closeConn closes the prepared statements and releases the connection, running PRAGMA
// optimize first (bounded to a second). Call after shutdown.
func (w *writer) closeConn() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := w.conn.ExecContext(ctx, "PRAGMA optimize"); err != nil {
		w.log.Debug("sqlite: optimize on close failed", "err", err)
	}
	for q, st := range w.stmts {
		_ = st.Close()
		delete(w.stmts, q)
	}
	return w.conn.Close()
}
