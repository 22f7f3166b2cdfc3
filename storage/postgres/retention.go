package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Retention: what the janitor (echogate's retention job, `echogate compact`) removes. Each
// method works in batches of short statements, so it never holds many row locks and turns keep
// flowing; cancelling ctx stops between batches and what was removed stays removed. autovacuum
// makes the freed space reusable; Vacuum does it at once.

const (
	// Completed events keep their dedupe record, not their raw payload: only a replay of an
	// unfinished event reads it.
	qClearPayloads = `UPDATE events SET payload = '\x' WHERE key IN (
SELECT key FROM events WHERE completed_at IS NOT NULL AND completed_at < $1 AND length(payload) > 0 LIMIT $2)`
	// Idle sessions, except those with a paused turn.
	qIdleSessions = `SELECT key FROM sessions s WHERE updated_at < $1
AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.session = s.key) ORDER BY updated_at LIMIT $2`
)

// pruneSessionBatch is how many sessions one transaction deletes (each with its transcript).
const pruneSessionBatch = 200

// ClearEventPayloads empties the payload of the events completed before `before` and returns
// how many it emptied. Their dedupe records stay (PruneEvents removes those later).
func (s *Store) ClearEventPayloads(ctx context.Context, before time.Time) (int64, error) {
	p, err := s.pool(ctx, "clear event payloads")
	if err != nil {
		return 0, err
	}
	var total int64
	for {
		tag, err := p.Exec(ctx, qClearPayloads, utc(before), pruneBatch)
		if err != nil {
			return total, fail(ctx, err, "clear event payloads (cleared %d)", total)
		}
		n := tag.RowsAffected()
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
	p, err := s.pool(ctx, "prune sessions")
	if err != nil {
		return 0, err
	}
	var total int64
	for {
		rows, err := p.Query(ctx, qIdleSessions, utc(before), pruneSessionBatch)
		if err != nil {
			return total, fail(ctx, err, "prune sessions (deleted %d)", total)
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return total, fail(ctx, err, "prune sessions (deleted %d)", total)
		}
		err = inTx(ctx, p, func(tx pgx.Tx) error {
			// The counter rows first, as DeleteSession does: they serialize with appends.
			for _, q := range [...]string{
				`DELETE FROM message_seqs WHERE session = ANY($1)`, `DELETE FROM messages WHERE session = ANY($1)`,
				`DELETE FROM grants WHERE session = ANY($1)`,
				`DELETE FROM memory_jobs WHERE session = ANY($1)`, `DELETE FROM memory_floors WHERE session = ANY($1)`,
				`DELETE FROM sessions s WHERE key = ANY($1) AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.session = s.key)`,
			} {
				if _, err := tx.Exec(ctx, q, keys); err != nil {
					return err
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

// Vacuum vacuums and analyzes the tables retention shrinks, so their space is reused at once.
// It does not lock out reads or writes (plain VACUUM, not FULL).
func (s *Store) Vacuum(ctx context.Context) error {
	p, err := s.pool(ctx, "vacuum")
	if err != nil {
		return err
	}
	if _, err := p.Exec(ctx, `VACUUM (ANALYZE) events, messages, message_seqs, sessions`); err != nil {
		return fail(ctx, err, "vacuum")
	}
	return nil
}
