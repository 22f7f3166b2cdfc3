package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/jackc/pgx/v5"
)

const (
	qClaimEvent = `INSERT INTO events (key, payload, claimed_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`
	// The first completion wins; completing again keeps its time.
	qCompleteEvent = `UPDATE events SET completed_at = coalesce(completed_at, $1) WHERE key = $2`
	qUnfinished    = `SELECT key, payload, claimed_at FROM events
WHERE completed_at IS NULL AND claimed_at < $1 ORDER BY claimed_at, key LIMIT $2`
	qPruneEvents = `DELETE FROM events WHERE key IN (
SELECT key FROM events WHERE completed_at IS NOT NULL AND completed_at < $1 LIMIT $2)`
)

// ClaimEvent records key as received, with its payload (the JSON of the InboundEvent) and time
// (zero means now). It returns true for the first claim of key and false for every later one.
// The check and the insert are one statement (INSERT … ON CONFLICT DO NOTHING on the primary
// key), so concurrent claims of one key, from this or another replica, see exactly one true.
func (s *Store) ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error) {
	if key == "" {
		return false, fmt.Errorf("postgres: claim event: %w: empty key", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("claim event %q", key))
	if err != nil {
		return false, err
	}
	tag, err := p.Exec(ctx, qClaimEvent, key, nonNil(payload), utc(s.stamp(at)))
	if err != nil {
		return false, fail(ctx, err, "claim event %q", key)
	}
	return tag.RowsAffected() == 1, nil
}

// CompleteEvent marks a claimed event as handled at `at` (zero means now), so it is no longer
// replayed by UnfinishedEvents. Completing twice is not an error and keeps the first time; a key
// that was never claimed wraps ErrNotFound.
func (s *Store) CompleteEvent(ctx context.Context, key string, at time.Time) error {
	if key == "" {
		return fmt.Errorf("postgres: complete event: %w: empty key", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("complete event %q", key))
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, qCompleteEvent, utc(s.stamp(at)), key)
	if err != nil {
		return fail(ctx, err, "complete event %q", key)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: complete event %q: %w", key, ErrNotFound)
	}
	return nil
}

// ReopenEvent marks a completed event unfinished again, so the next replay recovers it (see
// pipeline.EventStore). An unknown key wraps ErrNotFound.
func (s *Store) ReopenEvent(ctx context.Context, key string) error {
	p, err := s.pool(ctx, fmt.Sprintf("reopen event %q", key))
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, `UPDATE events SET completed_at = NULL WHERE key = $1`, key)
	if err != nil {
		return fail(ctx, err, "reopen event %q", key)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: reopen event %q: %w", key, ErrNotFound)
	}
	return nil
}

// UnfinishedEvents lists events claimed strictly before `before` and not completed, oldest
// first (ties by key), at most limit of them (limit <= 0: all).
func (s *Store) UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error) {
	p, err := s.pool(ctx, "unfinished events")
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, qUnfinished, utc(before), sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "unfinished events")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (echogate.ClaimedEvent, error) {
		var ev echogate.ClaimedEvent
		err := r.Scan(&ev.Key, &ev.Payload, &ev.ClaimedAt)
		ev.ClaimedAt = ev.ClaimedAt.UTC()
		return ev, err
	})
	if err != nil {
		return nil, fail(ctx, err, "unfinished events")
	}
	return nilIfEmpty(out), nil
}

// pruneBatch bounds how many rows one PruneEvents statement deletes.
const pruneBatch = 2000

// PruneEvents deletes events completed before `before` and returns how many it deleted. The
// dedupe record only has to outlive platform retries (Slack retries for minutes, Discord
// replays a resumed session), so a janitor can call it with e.g. now-7 days. It deletes in
// batches, one short statement each, so that it never holds many row locks or bloats one
// transaction; cancelling ctx stops between batches (what was deleted stays deleted).
// Unfinished events are never pruned. It is not part of pipeline.Store.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	p, err := s.pool(ctx, "prune events")
	if err != nil {
		return 0, err
	}
	var total int64
	for {
		tag, err := p.Exec(ctx, qPruneEvents, utc(before), pruneBatch)
		if err != nil {
			return total, fail(ctx, err, "prune events (deleted %d)", total)
		}
		n := tag.RowsAffected()
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}

// nilIfEmpty returns nil for an empty slice, so that "nothing" looks the same in both stores.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
