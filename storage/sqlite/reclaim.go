package sqlite

import (
	"context"
	"fmt"
	"time"
)

const qReclaimEvent = `UPDATE events SET claimed_at = ? WHERE key = ? AND completed_at IS NULL AND claimed_at < ?`

// ReclaimEvent takes over an unfinished event whose claim is older than staleBefore, moving its
// claim time to now. Exactly one of several concurrent reclaimers gets true, so a replayed event
// is replayed by one process only. A completed, fresh or unknown event gives false.
func (s *Store) ReclaimEvent(ctx context.Context, key string, staleBefore, now time.Time) (bool, error) {
	if key == "" {
		return false, fmt.Errorf("sqlite: reclaim event: %w: empty key", ErrInvalid)
	}
	d, err := s.evConns(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlite: reclaim event %q: %w", key, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(qReclaimEvent, toMicros(s.stamp(now)), key, toMicros(staleBefore))
		return err
	})
	if err != nil {
		return false, fail(ctx, err, "reclaim event %q", key)
	}
	return n == 1, nil
}
