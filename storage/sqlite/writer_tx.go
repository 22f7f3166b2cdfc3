package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The writer's transactions: a batch of calls in one, with savepoints only when a call fails
// (see writer.go for the queue and its cancellation rules).

// runBatch runs the calls of batch in one transaction and answers each.
//
// It first runs them all without savepoints: nearly every call succeeds, and a SAVEPOINT and
// RELEASE around each call cost about a tenth of the writer's time. When a call fails, that
// transaction is rolled back and the batch runs again with each call in its own savepoint, so
// the failing call fails alone. A write call's fn may therefore run twice; fns only set (never
// accumulate) state outside their transaction, so a second run is as good as the first.
func (w *writer) runBatch(batch []*writeReq) {
	live := make([]*writeReq, 0, len(batch))
	for _, r := range batch {
		if !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue // its caller left
		}
		if err := r.ctx.Err(); err != nil {
			r.finish(err)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	results := make([]error, len(live)) // nil for calls that succeeded
	err := errRetrySavepoints
	if w.hooks || len(live) == 1 {
		err = w.runTx(live, results, false)
	}
	if err == errRetrySavepoints {
		w.stats.retries.Add(1)
		clear(results)
		err = w.runTx(live, results, true)
	}
	for i, r := range live {
		res := results[i]
		if res == nil {
			res = err
		}
		if r.lazy && res != nil {
			w.log.Warn("sqlite: a write behind failed", "err", res)
		}
		r.finish(res)
	}
}

// errRetrySavepoints reports that a call failed in a batch run without savepoints: the
// transaction was rolled back and the batch must run again with them.
var errRetrySavepoints = errors.New("sqlite: a call of the batch failed; retry with savepoints")

// runTx runs calls in one transaction, each in its own savepoint when savepoints is set, and
// commits. It records each failed call's error in results and returns the error that broke the
// whole transaction (nothing of it was committed), or errRetrySavepoints (see runBatch). A
// lone call needs no savepoint: its failure is the transaction's.
func (w *writer) runTx(calls []*writeReq, results []error, savepoints bool) error {
	ctx := context.Background() // never interrupt a shared transaction; see above
	tx := &wtx{ctx: ctx, w: w}
	if _, err := tx.exec("BEGIN IMMEDIATE"); err != nil {
		// Typically "database is locked": another process held the write lock for longer
		// than the busy timeout. Nothing ran.
		return fmt.Errorf("begin transaction: %w", err)
	}
	var abort error // the transaction is unusable: everything rolls back
	w.txEnded = false
	for i, r := range calls {
		if !savepoints || len(calls) == 1 {
			err := r.fn(tx)
			switch {
			case len(calls) == 1 && err != nil:
				results[i], abort = err, err
			case len(calls) == 1 && w.txEnded:
				abort = errors.New("the transaction ended inside the call")
			case err != nil || w.txEnded:
				// A call that ended the transaction (SQLite rolls back by itself on an I/O
				// error or a full disk) left its neighbours' changes undone: only savepoints
				// tell which call did what.
				abort = errRetrySavepoints
			}
			if abort != nil {
				break
			}
			continue
		}
		if _, err := tx.exec("SAVEPOINT w"); err != nil {
			abort = fmt.Errorf("savepoint: %w", err)
			break
		}
		if err := r.fn(tx); err != nil {
			results[i] = err
			w.seqs.rolledBack()
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
		} else {
			w.seqs.committed()
		}
	}
	if abort != nil {
		w.seqs.rolledBack()
		if _, err := tx.exec("ROLLBACK"); err != nil && !isNoTransaction(err) {
			w.log.Error("sqlite: rollback failed", "err", err)
		}
		if abort != errRetrySavepoints {
			// The calls after the one that broke the transaction never ran; they are
			// answered with abort too (by runBatch).
			for i := range results {
				if results[i] == nil {
					results[i] = fmt.Errorf("not run or rolled back: %w", abort)
				}
			}
		}
	}
	return abort
}

// isNoTransaction reports the error of ROLLBACK when SQLite already rolled back.
func isNoTransaction(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "no transaction is active")
}
