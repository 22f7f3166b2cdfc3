package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate"
)

// Retention: what the janitor (echogate's retention job, `echogate compact`) removes. Each
// method works in batches of short write transactions, so turns keep flowing while it runs;
// cancelling ctx stops between batches and what was removed stays removed. Freed pages are
// reused by later writes, so the files stop growing once retention applies; Vacuum gives the
// space back to the file system.

const (
	// Completed events keep their dedupe record, not their raw payload: only a replay of an
	// unfinished event reads it.
	qClearPayloads = `UPDATE events SET payload = x'' WHERE key IN (
SELECT key FROM events WHERE completed_at IS NOT NULL AND completed_at < ? AND length(payload) > 0 LIMIT ?)`
	// Idle sessions, except those with a paused turn (its pause outlives retention only until
	// its approval timeout, which finishes it).
	qIdleSessions = `SELECT key FROM sessions WHERE updated_at < ?
AND NOT EXISTS (SELECT 1 FROM pending WHERE pending.session = sessions.key) ORDER BY updated_at LIMIT ?`
)

// ClearEventPayloads empties the payload of the events completed before `before` and returns
// how many it emptied. Their dedupe records stay (PruneEvents removes those later).
func (s *Store) ClearEventPayloads(ctx context.Context, before time.Time) (int64, error) {
	d, err := s.evConns(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: clear event payloads: %w", err)
	}
	var total int64
	for {
		var n int64
		err := d.write(ctx, func(tx *wtx) (err error) {
			n, err = tx.rowsAffected(qClearPayloads, toMicros(before), pruneBatch)
			return err
		})
		if err != nil {
			return total, fail(ctx, err, "clear event payloads (cleared %d)", total)
		}
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}

// PruneSessions deletes the sessions last updated before `before`, with their transcripts and
// grants, and returns how many it deleted. Sessions with a paused turn are kept. Turns and the
// usage ledger are kept (money spent stays on the books).
func (s *Store) PruneSessions(ctx context.Context, before time.Time) (int64, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune sessions: %w", err)
	}
	var total int64
	for {
		keys, err := s.idleSessions(ctx, d, before)
		if err != nil {
			return total, fail(ctx, err, "prune sessions (deleted %d)", total)
		}
		err = d.write(ctx, func(tx *wtx) error {
			for _, k := range keys {
				tx.w.seqs.forget(echogate.SessionKey(k))
				for _, q := range []string{qDeleteMessages, qDeleteGrants, qDeleteMemoryJobs, qDeleteMemoryFloor, qDeleteSession} {
					if _, err := tx.exec(q, k); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return total, fail(ctx, err, "prune sessions (deleted %d)", total)
		}
		total += int64(len(keys))
		if len(keys) < pruneSessionBatch {
			return total, nil
		}
	}
}

// pruneSessionBatch is how many sessions one transaction deletes (each with its transcript).
const pruneSessionBatch = 200

func (s *Store) idleSessions(ctx context.Context, d *dbs, before time.Time) ([]string, error) {
	st, err := d.read(ctx, qIdleSessions)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, toMicros(before), pruneSessionBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// Vacuum rebuilds both database files without their free pages and truncates their WALs. It
// holds the write lock for as long as the rebuild takes (seconds for a large file): writes of a
// running gateway wait meanwhile, up to the busy timeout. Run it when the gateway is quiet.
func (s *Store) Vacuum(ctx context.Context) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: vacuum: %w", err)
	}
	for _, db := range []*dbs{d, d.ev} {
		if db == nil || db.cp == nil {
			continue
		}
		// The checkpointer's connection: its pool of one serializes this with its checkpoints.
		for _, q := range []string{"VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"} {
			if _, err := db.cp.db.ExecContext(ctx, q); err != nil {
				return fail(ctx, err, "vacuum %s: %s", db.path, q)
			}
		}
	}
	return nil
}
