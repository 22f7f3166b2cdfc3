package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate"
)

const (
	qClaimEvent = `INSERT INTO events (key, payload, claimed_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`
	// The first completion wins; completing again keeps its time.
	qCompleteEvent = `UPDATE events SET completed_at = coalesce(completed_at, ?) WHERE key = ?`
	qUnfinished    = `SELECT key, payload, claimed_at FROM events
WHERE completed_at IS NULL AND claimed_at < ? ORDER BY claimed_at, key LIMIT ?`
	qPruneEvents = `DELETE FROM events WHERE key IN (
SELECT key FROM events WHERE completed_at IS NOT NULL AND completed_at < ? LIMIT ?)`
)

// ClaimEvent records key as received, with its payload (the JSON of the InboundEvent) and time
// (zero means now). It returns true for the first claim of key and false for every later one.
// The check and the insert are one statement, so concurrent claims of one key, from this or
// another process, see exactly one true.
func (s *Store) ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error) {
	if key == "" {
		return false, fmt.Errorf("sqlite: claim event: %w: empty key", ErrInvalid)
	}
	d, err := s.evConns(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlite: claim event %q: %w", key, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(qClaimEvent, key, nonNil(payload), toMicros(s.stamp(at)))
		return err
	})
	if err != nil {
		return false, fail(ctx, err, "claim event %q", key)
	}
	return n == 1, nil
}

// CompleteEvent marks a claimed event as handled at `at` (zero means now), so it is no longer
// replayed by UnfinishedEvents. Completing twice is not an error and keeps the first time; a key
// that was never claimed wraps ErrNotFound.
func (s *Store) CompleteEvent(ctx context.Context, key string, at time.Time) error {
	if key == "" {
		return fmt.Errorf("sqlite: complete event: %w: empty key", ErrInvalid)
	}
	d, err := s.evConns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: complete event %q: %w", key, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(qCompleteEvent, toMicros(s.stamp(at)), key)
		return err
	})
	if err != nil {
		return fail(ctx, err, "complete event %q", key)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: complete event %q: %w", key, ErrNotFound)
	}
	return nil
}

// ReopenEvent marks a completed event unfinished again, so the next replay recovers it (see
// pipeline.EventStore). An unknown key wraps ErrNotFound.
func (s *Store) ReopenEvent(ctx context.Context, key string) error {
	d, err := s.evConns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: reopen event %q: %w", key, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(`UPDATE events SET completed_at = NULL WHERE key = ?`, key)
		return err
	})
	if err != nil {
		return fail(ctx, err, "reopen event %q", key)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: reopen event %q: %w", key, ErrNotFound)
	}
	return nil
}

// UnfinishedEvents lists events claimed strictly before `before` and not completed, oldest
// first (ties by key), at most limit of them (limit <= 0: all). Completions written behind
// (FinishTurn) commit first, so a turn's end that returned is seen.
func (s *Store) UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error) {
	d, err := s.evConns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: unfinished events: %w", err)
	}
	if err := d.wr.sync(ctx); err != nil {
		return nil, fail(ctx, err, "unfinished events: commit the completions written behind")
	}
	st, err := d.read(ctx, qUnfinished)
	if err != nil {
		return nil, fail(ctx, err, "unfinished events")
	}
	rows, err := st.QueryContext(ctx, toMicros(before), sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "unfinished events")
	}
	defer rows.Close()
	var out []echogate.ClaimedEvent
	for rows.Next() {
		var (
			ev echogate.ClaimedEvent
			at int64
		)
		if err := rows.Scan(&ev.Key, &ev.Payload, &at); err != nil {
			return nil, fail(ctx, err, "unfinished events")
		}
		ev.ClaimedAt = fromMicros(at)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "unfinished events")
	}
	return out, nil
}

// pruneBatch bounds how long PruneEvents holds the write lock at a time.
const pruneBatch = 2000

// PruneEvents deletes events completed before `before` and returns how many it deleted. The
// dedupe record only has to outlive platform retries (Slack retries for minutes, Discord
// replays a resumed session), so a janitor can call it with e.g. now-7 days. It deletes in
// batches, one short write transaction each, so turns keep flowing; cancelling ctx stops
// between batches (what was deleted stays deleted). Unfinished events are never pruned.
// It is not part of pipeline.Store.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	d, err := s.evConns(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune events: %w", err)
	}
	var total int64
	for {
		var n int64
		err := d.write(ctx, func(tx *wtx) (err error) {
			n, err = tx.rowsAffected(qPruneEvents, toMicros(before), pruneBatch)
			return err
		})
		if err != nil {
			return total, fail(ctx, err, "prune events (deleted %d)", total)
		}
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}
