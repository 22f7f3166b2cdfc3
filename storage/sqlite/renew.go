package sqlite

import (
	"context"
	"time"
)

// renewChunk bounds the keys renewed in one write transaction, so a long list does not hold
// the writer from everything else.
const renewChunk = 1000

const qRenewClaim = `UPDATE events SET claimed_at = ? WHERE key = ? AND completed_at IS NULL`

// RenewClaims moves the claim of each unfinished event in keys to about now (see
// pipeline.ClaimRenewer; the pipeline renews only on a store shared by replicas, which this one
// never is, but the contract is the same): the i-th of n keys is stamped now − (n−1−i) µs, so
// UnfinishedEvents lists them in the order given. One write transaction per renewChunk keys, none
// for an empty list; after an error the chunks written before stay renewed. It returns how many
// events it renewed. A zero now means the store's clock.
func (s *Store) RenewClaims(ctx context.Context, keys []string, now time.Time) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	d, err := s.evConns(ctx)
	if err != nil {
		return 0, fail(ctx, err, "renew event claims")
	}
	last := toMicros(s.stamp(now))
	var renewed int64
	for off := 0; off < len(keys); off += renewChunk {
		chunk := keys[off:min(off+renewChunk, len(keys))]
		var n int64
		err := d.write(ctx, func(tx *wtx) error {
			n = 0
			for i, key := range chunk {
				k, err := tx.rowsAffected(qRenewClaim, last-int64(len(keys)-1-off-i), key)
				if err != nil {
					return err
				}
				n += k
			}
			return nil
		})
		if err != nil {
			return renewed, fail(ctx, err, "renew event claims (%d of %d keys, from %q)", len(chunk), len(keys), chunk[0])
		}
		renewed += n
	}
	return renewed, nil
}
