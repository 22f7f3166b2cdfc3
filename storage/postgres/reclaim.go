package postgres

import (
	"context"
	"fmt"
	"time"
)

const qReclaimEvent = `UPDATE events SET claimed_at = $1 WHERE key = $2 AND completed_at IS NULL AND claimed_at < $3`

// ReclaimEvent takes over an unfinished event whose claim is older than staleBefore, moving its
// claim time to now. Exactly one of several concurrent reclaimers (replicas) gets true, so an
// event left behind by a dead replica is replayed by one other replica only. A completed, fresh or
// unknown event gives false.
func (s *Store) ReclaimEvent(ctx context.Context, key string, staleBefore, now time.Time) (bool, error) {
	if key == "" {
		return false, fmt.Errorf("postgres: reclaim event: %w: empty key", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("reclaim event %q", key))
	if err != nil {
		return false, err
	}
	tag, err := p.Exec(ctx, qReclaimEvent, utc(s.stamp(now)), key, utc(staleBefore))
	if err != nil {
		return false, fail(ctx, err, "reclaim event %q", key)
	}
	return tag.RowsAffected() == 1, nil
}
