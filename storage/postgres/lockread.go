package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

// TryLockSessionPending is TryLockSession that also reads the session's paused turn, in the
// round trip that takes the lock: one batch whose second statement runs after the first, with a
// snapshot of its own (READ COMMITTED), so it sees what the lock's previous holder committed
// before it let go. pend is nil when the session has no paused turn, and always when ok is
// false. The pipeline asks it once per event instead of TryLockSession and GetPending: one
// round trip on an event's critical path instead of two.
//
// With event set, done reports whether that event was completed already, read in the same
// batch: a replica that waited for the lock longer than agent.replay_after may find its event
// taken over and answered by another, and must not answer it again.
func (s *Store) TryLockSessionPending(ctx context.Context, key echogate.SessionKey, event string) (unlock func(), ok bool, pend *echogate.PendingTurn, done bool, err error) {
	rd := &pendingRead{event: event}
	unlock, ok, err = s.tryLockSession(ctx, key, rd)
	if ok && rd.found {
		pend = &rd.pend
	}
	return unlock, ok, pend, ok && rd.eventDone, err
}

// pendingRead is the session's paused turn read with its lock (queueLockRead).
type pendingRead struct {
	pend      echogate.PendingTurn
	found     bool
	event     string // "" : not asked
	eventDone bool
}

const qEventDone = `SELECT completed_at IS NOT NULL FROM events WHERE key = $1`

// scan reads the paused turn's row from br (none: no pause); it is kept only when the lock was
// taken (got).
func (rd *pendingRead) scan(br pgx.BatchResults, got bool) error {
	p, err := scanPending(br.QueryRow())
	switch {
	case err == nil:
		rd.pend, rd.found = p, got
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("read the paused turn with the lock: %w", err)
	}
	return nil
}

// queueLockRead queues a lock statement lockSQL (whose one row, none when not taken, the scan
// given to readLockRead turns into the lock's outcome) and, with rd, the read of key's paused
// turn after it; readLockRead reads them. The read's outcome is kept only when the lock was
// taken.
func queueLockRead(b *pgx.Batch, key echogate.SessionKey, rd *pendingRead, lockSQL string, args ...any) {
	b.Queue(lockSQL, args...)
	if rd != nil {
		b.Queue(qGetPending, string(key))
		if rd.event != "" {
			b.Queue(qEventDone, rd.event)
		}
	}
}

func readLockRead(br pgx.BatchResults, rd *pendingRead, scan func(pgx.Row) (bool, error)) (bool, error) {
	if rd != nil {
		rd.found, rd.eventDone = false, false
	}
	got, err := scan(br.QueryRow())
	if err != nil || rd == nil {
		return got, err
	}
	if err := rd.scan(br, got); err != nil {
		return got, err
	}
	if rd.event != "" {
		var done bool
		switch derr := br.QueryRow().Scan(&done); {
		case derr == nil:
			rd.eventDone = done
		case !errors.Is(derr, pgx.ErrNoRows):
			return got, fmt.Errorf("read the event's state with the lock: %w", derr)
		}
	}
	return got, nil
}

// scanGot scans an advisory lock's boolean outcome.
func scanGot(r pgx.Row) (bool, error) {
	var got bool
	err := r.Scan(&got)
	return got, err
}

// scanLease scans a lease statement's outcome: its row when taken, none when another owner
// holds it.
func scanLease(r pgx.Row) (bool, error) {
	var session string
	err := r.Scan(&session)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
