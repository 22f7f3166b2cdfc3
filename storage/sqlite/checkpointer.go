package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"time"
)

// The checkpointer copies committed WAL frames back into the database file from its own
// connection, so that the writer goroutine, the store's one serial path, does not pay for
// checkpoint I/O and its fsyncs on the commit that crosses SQLite's auto-checkpoint threshold.
// With the checkpoint inline, a write batch now and then took 20-40 ms, and every write
// queued behind it waited as long.
//
// A PASSIVE checkpoint never blocks the writer or the readers. It cannot reset the WAL,
// though: SQLite starts the log over only when a write transaction begins with every frame
// already copied, and under steady load the writer has always appended more since. So once
// the log has grown past restartFrames, the writer runs one PASSIVE checkpoint itself between
// batches. The checkpointer has copied nearly everything by then, so the writer's checkpoint is
// short, and its next transaction restarts the log.
//
// When the store has been idle for truncateIdle after a checkpoint, the checkpointer runs one
// TRUNCATE checkpoint, which empties the WAL file: after a burst of load the log (up to
// restartFrames pages, 64 MiB) does not stay on disk while nothing is written. It waits for
// readers (busy timeout) and blocks writers only for its own short duration.
//
// Lifecycle: started by Open, stopped by Close before the writer's connection closes. It runs
// at most one checkpoint every checkpointEvery, and only after a commit asked for one.
const (
	checkpointEvery = 100 * time.Millisecond
	// restartFrames is the WAL size (in pages) from which the writer checkpoints itself so the
	// log restarts: 64 MiB with 4 KiB pages. Each restart stalls the writer for its fsyncs
	// (about 10 ms here); at 1000 sessions 4096 pages meant several a second and cost ~2.5
	// points of throughput (bench/turns). SQLite's auto-checkpoint is the backstop at twice it.
	restartFrames = 16384
	// checkpointTimeout bounds one background checkpoint (it is resumable: an interrupted one
	// loses nothing).
	checkpointTimeout = 30 * time.Second
	// truncateIdle is how long without commits empties the WAL file.
	truncateIdle = 10 * time.Second
)

type checkpointer struct {
	db     *sql.DB // its own pool of one connection
	ctx    context.Context
	cancel context.CancelFunc // interrupts a checkpoint in progress (shutdown)
	log    *slog.Logger
	kick   chan struct{} // buffered(1): a commit happened since the last checkpoint
	frames atomic.Int64  // WAL size in frames reported by the last checkpoint
	// restartAt is restartFrames (tests lower it).
	restartAt atomic.Int64
	runs      atomic.Int64 // background checkpoints done
	truncates atomic.Int64 // idle TRUNCATE checkpoints done
	// idleAfter is truncateIdle in nanoseconds (tests lower it).
	idleAfter atomic.Int64
	stop      chan struct{}
	done      chan struct{}
}

func newCheckpointer(db *sql.DB, log *slog.Logger) *checkpointer {
	c := &checkpointer{db: db, log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.restartAt.Store(restartFrames)
	c.idleAfter.Store(int64(truncateIdle))
	go c.run()
	return c
}

// committed tells the checkpointer that a transaction committed. It never blocks.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// needRestart reports whether the WAL has grown enough that the writer should checkpoint
// itself (see above).
func (c *checkpointer) needRestart() bool { return c.frames.Load() >= c.restartAt.Load() }

// restarted records that the writer checkpointed: the log starts over at its next commit.
func (c *checkpointer) restarted() { c.frames.Store(0) }

func (c *checkpointer) run() {
	defer close(c.done)
	dirty := false // committed since the last TRUNCATE
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	for {
		var idleC <-chan time.Time
		if dirty {
			idle.Reset(time.Duration(c.idleAfter.Load()))
			idleC = idle.C
		}
		select {
		case <-c.stop:
			return
		case <-idleC:
			c.truncate(c.ctx)
			dirty = false
			continue
		case <-c.kick:
			idle.Stop()
		}
		dirty = true
		c.checkpoint(c.ctx)
		t := time.NewTimer(checkpointEvery)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// checkpoint runs one PASSIVE checkpoint and records the WAL size it reports.
func (c *checkpointer) checkpoint(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	var busy, frames, copied int64
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("sqlite: background checkpoint failed; the writer checkpoints instead", "err", err)
			c.frames.Store(c.restartAt.Load())
		}
		return
	}
	if frames >= 0 {
		c.frames.Store(frames)
	}
	c.runs.Add(1)
}

// truncate checkpoints everything and empties the WAL file; a busy database is left for the
// next idle period.
func (c *checkpointer) truncate(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	var busy, frames, copied int64
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &copied); err != nil {
		if ctx.Err() == nil {
			c.log.Debug("sqlite: idle WAL truncation failed; retried after the next write", "err", err)
		}
		return
	}
	if busy == 0 {
		c.frames.Store(0)
		c.truncates.Add(1)
	}
}

// shutdown stops the goroutine (interrupting a checkpoint in progress) and closes the
// connection.
func (c *checkpointer) shutdown() error {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.cancel()
	<-c.done
	return c.db.Close()
}
