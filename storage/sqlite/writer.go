package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
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
	lazy  bool // written behind: nobody waits (writer_lazy.go)
	fn    func(tx *wtx) error
	state atomic.Int32
	done  chan error // buffered(1); nil when notify is set
	// notify, when set, is told the outcome instead of done (enqueueNotify): nobody waits.
	notify func(error)
}

// finish reports the call's outcome: to notify, or to done for its waiting caller.
func (r *writeReq) finish(err error) {
	if r.notify != nil {
		r.notify(err)
		return
	}
	r.done <- err
}

type writer struct {
	conn  *sql.Conn
	log   *slog.Logger
	cp    *checkpointer
	stmts map[string]*sql.Stmt // owned by the writer goroutine
	queue chan *writeReq
	stop  chan struct{} // closed by shutdown
	done  chan struct{} // closed when the goroutine has exited
	batch []*writeReq
	lazy  lazyCalls // calls written behind, waiting for the next transaction (writer_lazy.go)
	seqs  seqCache  // last transcript seq per session (seqcache.go); owned by the goroutine
	stats struct{ batches, calls, busy, retries, restarts atomic.Int64 }
	// txEnded is set by the connection's commit and rollback hooks, which SQLite calls on the
	// writer goroutine itself: a transaction ended (committed, rolled back, or a statement
	// committed on its own outside one).
	txEnded bool
	hooks   bool // txEnded is maintained
	// enqueued, when set (tests only), is called after a call entered the queue. It is read
	// before the call is queued: calls already on their way when it is set are not reported.
	enqueued atomic.Pointer[func()]
}

func newWriter(conn *sql.Conn, log *slog.Logger, cp *checkpointer) *writer {
	w := &writer{
		conn:  conn,
		log:   log,
		cp:    cp,
		stmts: make(map[string]*sql.Stmt),
		queue: make(chan *writeReq, writeQueue),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		batch: make([]*writeReq, 0, maxBatch),
	}
	w.watchTx()
	go w.run()
	return w
}

// txHooks are the driver connection's hooks that watchTx needs.
type txHooks interface {
	RegisterCommitHook(msqlite.CommitHookFn)
	RegisterRollbackHook(msqlite.RollbackHookFn)
}

// watchTx installs the hooks that set txEnded. Without them (another driver), a batch without
// savepoints could not notice a call that ended the transaction, so every batch keeps them.
func (w *writer) watchTx() {
	ok := false
	_ = w.conn.Raw(func(dc any) error {
		h, isHooks := dc.(txHooks)
		if isHooks {
			h.RegisterCommitHook(func() int32 { w.txEnded = true; return 0 })
			h.RegisterRollbackHook(func() { w.txEnded = true })
			ok = true
		}
		return nil
	})
	w.hooks = ok
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
	req, err := w.enqueue(ctx, solo, fn)
	if err != nil {
		return err
	}
	return w.wait(ctx, req)
}

// enqueue queues fn and returns at once; wait blocks for its outcome. Together they are do,
// split so a caller can queue calls on two writers and then wait for both.
func (w *writer) enqueue(ctx context.Context, solo bool, fn func(tx *wtx) error) (*writeReq, error) {
	req := &writeReq{ctx: ctx, solo: solo, fn: fn, done: make(chan error, 1)}
	if err := w.send(ctx, req); err != nil {
		return nil, err
	}
	return req, nil
}

// send puts req on the queue, blocking while it is full; it fails when ctx ends first or the
// writer is closed, and req was not queued.
func (w *writer) send(ctx context.Context, req *writeReq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
	return nil
}

// enqueueNotify queues fn and returns at once; notify is told its outcome, exactly once, as
// do would have returned it: on the writer goroutine after the transaction that holds fn's
// changes ended, or on the caller's before enqueueNotify returns when fn was not queued (ctx
// ended, the writer is closed). notify must not block: the writer's next batch waits for it.
// A call whose ctx ends while it is queued is dropped when the writer reaches it and reports
// ctx's error, as in do; it saves a caller the goroutine that would wait for the outcome.
func (w *writer) enqueueNotify(ctx context.Context, fn func(tx *wtx) error, notify func(error)) {
	req := &writeReq{ctx: ctx, fn: fn, notify: notify}
	if err := w.send(ctx, req); err != nil {
		notify(err)
		return
	}
	// A call queued after shutdown began may have missed the writer's drain, and nobody
	// waits to notice (wait watches done): whichever of this and the drain takes it first
	// reports ErrClosed.
	select {
	case <-w.stop:
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			notify(ErrClosed)
		}
	default:
	}
}

// wait waits for the outcome of a queued call; see the cancellation rules above.
func (w *writer) wait(ctx context.Context, req *writeReq) error {
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
	defer w.lazy.stop()
	for {
		req := next
		next = nil
		if req == nil {
			select {
			case <-w.stop:
				w.drain()
				return
			case req = <-w.queue:
			case <-w.lazy.due():
				w.flushLazy()
				if hook := w.lazy.timedOut.Load(); hook != nil {
					(*hook)()
				}
				continue
			}
		}
		if req.lazy && w.lazy.hold(req) {
			continue
		}
		if req.solo {
			w.flushLazy() // they were queued first
			w.runSolo(req)
			w.committed()
			continue
		}
		w.batch = append(w.lazy.takeInto(w.batch[:0]), req)
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
		t0 := time.Now()
		w.runBatch(w.batch)
		w.stats.busy.Add(int64(time.Since(t0)))
		w.stats.batches.Add(1)
		w.stats.calls.Add(int64(len(w.batch)))
		clear(w.batch)
		w.committed()
	}
}

// committed runs after each batch or solo call: it asks the checkpointer for a checkpoint and,
// when the WAL has grown past restartFrames, checkpoints on the writer connection so the log
// restarts at the next commit (see checkpointer.go). A failed or busy checkpoint is retried
// after the next batch.
func (w *writer) committed() {
	w.cp.committed()
	if !w.cp.needRestart() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	var busy, frames, copied int64
	err := w.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	switch {
	case err != nil:
		w.log.Warn("sqlite: writer checkpoint failed; retrying after the next write", "err", err)
	case frames >= 0 && copied == frames:
		w.cp.restarted()
		w.stats.restarts.Add(1)
	}
}

// drain fails every queued call after stop, except the calls written behind: those commit,
// with the ones held (their callers were told they would).
func (w *writer) drain() {
	for {
		select {
		case r := <-w.queue:
			if r.lazy {
				w.lazy.calls = append(w.lazy.calls, r)
				continue
			}
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				r.finish(ErrClosed)
			}
		default:
			w.flushLazy()
			return
		}
	}
}

func (w *writer) runSolo(req *writeReq) {
	if !req.state.CompareAndSwap(reqQueued, reqTaken) {
		return
	}
	err := req.fn(&wtx{ctx: req.ctx, w: w})
	w.seqs.rolledBack() // a solo call commits on its own: keep nothing it may have rolled back
	req.finish(err)
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

// WriteStats are cumulative figures of the store's writer since Open.
type WriteStats struct {
	Batches int64         // group-commit transactions (solo calls not counted)
	Calls   int64         // write calls they held
	Busy    time.Duration // time the writer spent running them, commits included
	// Retries counts batches run again with savepoints because a call failed (see runBatch).
	Retries int64
	// Checkpoints counts the checkpointer's background checkpoints; Restarts the writer's own,
	// which let the WAL start over (see checkpointer.go).
	Checkpoints, Restarts int64
}

// WriteStats returns the writer's figures since Open (zero when the store is not open).
func (s *Store) WriteStats() WriteStats {
	d := s.st.Load()
	if d == nil {
		return WriteStats{}
	}
	st := &d.wr.stats
	return WriteStats{Batches: st.batches.Load(), Calls: st.calls.Load(), Busy: time.Duration(st.busy.Load()),
		Retries: st.retries.Load(), Checkpoints: d.cp.runs.Load(), Restarts: st.restarts.Load()}
}
