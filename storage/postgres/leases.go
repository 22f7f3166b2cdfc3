package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate/internal/lease"
)

var _ lease.Store = (*Store)(nil)

// A lease is taken when free, expired or already the owner's: the upsert's WHERE leaves a
// row held by someone else alone (no row changed). One statement, so it is atomic through a
// transaction-mode pooler too.
const qAcquireLease = `INSERT INTO leases (name, owner, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE leases.owner = excluded.owner OR leases.expires_at <= $4`

// Acquire implements lease.Store.
func (s *Store) Acquire(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	if name == "" || owner == "" || ttl <= 0 {
		return false, fmt.Errorf("postgres: acquire lease %q: %w: a lease needs a name, an owner and a positive ttl", name, ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("acquire lease %q", name))
	if err != nil {
		return false, err
	}
	tag, err := p.Exec(ctx, qAcquireLease, name, owner, utc(now.Add(ttl)), utc(now))
	if err != nil {
		return false, fail(ctx, err, "acquire lease %q", name)
	}
	return tag.RowsAffected() > 0, nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, name, owner string) error {
	p, err := s.pool(ctx, fmt.Sprintf("release lease %q", name))
	if err != nil {
		return err
	}
	if _, err := p.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND owner = $2`, name, owner); err != nil {
		return fail(ctx, err, "release lease %q", name)
	}
	return nil
}

// Holders implements lease.Store.
func (s *Store) Holders(ctx context.Context, prefix string, now time.Time) (map[string]string, error) {
	p, err := s.pool(ctx, "lease holders")
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, `SELECT name, owner FROM leases WHERE starts_with(name, $1) AND expires_at > $2`, prefix, utc(now))
	if err != nil {
		return nil, fail(ctx, err, "lease holders")
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, owner string
		if err := rows.Scan(&name, &owner); err != nil {
			return nil, fail(ctx, err, "lease holders")
		}
		out[name] = owner
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "lease holders")
	}
	return out, nil
}
