package postgres

import (
	"context"
	"time"
)

// renewChunk bounds the keys one RenewClaims statement carries (one array parameter, one round
// trip each): a replica holding more events renews them in several statements.
const renewChunk = 1000

// qRenewClaims stamps the i-th (1-based) of a chunk's keys now − ($3 − i) µs, where $3 is the
// number of keys from the chunk's start to the end of the whole list: the last key of the list
// gets now, each earlier one a microsecond less, so the list's order survives in claimed_at.
// Completed events keep their claim; unknown keys match nothing. A row another transaction is
// writing is skipped, not waited for: it is a turn's end completing the event, or its claim,
// in a lane's group (lane.go) that holds the rows of several events until it commits, and
// waiting would close a deadlock with that group whenever the two lock the same rows in a
// different order (PostgreSQL then breaks it after deadlock_timeout, a second in which both
// stall). A skipped event is renewed by the next renewal, a third of replay_after later.
const qRenewClaims = `WITH k AS (
  SELECT key, ord FROM unnest($2::text[]) WITH ORDINALITY AS k(key, ord)
), free AS (
  SELECT e.key FROM events AS e JOIN k ON e.key = k.key WHERE e.completed_at IS NULL FOR UPDATE OF e SKIP LOCKED
)
UPDATE events AS e
SET claimed_at = $1::timestamptz - ($3::bigint - k.ord) * interval '1 microsecond'
FROM free JOIN k ON k.key = free.key
WHERE e.key = free.key`

// RenewClaims moves the claim of each unfinished event in keys to about now (see
// pipeline.ClaimRenewer): the replica that holds them keeps them from being taken over by
// ReclaimEvent. keys come oldest first; the i-th of n is stamped now − (n−1−i) µs so that
// UnfinishedEvents lists them in that order. It sends one statement per renewChunk keys (none for
// an empty list) and returns how many events it renewed; after an error the chunks sent before
// stay renewed. A zero now means the store's clock.
func (s *Store) RenewClaims(ctx context.Context, keys []string, now time.Time) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	p, err := s.pool(ctx, "renew event claims")
	if err != nil {
		return 0, err
	}
	stamp := utc(s.stamp(now))
	var renewed int64
	for off := 0; off < len(keys); off += renewChunk {
		chunk := keys[off:min(off+renewChunk, len(keys))]
		tag, err := p.Exec(ctx, qRenewClaims, stamp, chunk, int64(len(keys)-off))
		if err != nil {
			return renewed, fail(ctx, err, "renew event claims (%d of %d keys, from %q)", len(chunk), len(keys), chunk[0])
		}
		renewed += tag.RowsAffected()
	}
	return renewed, nil
}
