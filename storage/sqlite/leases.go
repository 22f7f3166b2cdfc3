package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate/internal/lease"
)

var _ lease.Store = (*Store)(nil)

// A lease is taken when free, expired or already the owner's: the upsert's WHERE leaves a
// row held by someone else alone (no row changed).
const qAcquireLease = `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`

// Acquire implements lease.Store.
func (s *Store) Acquire(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	if name == "" || owner == "" || ttl <= 0 {
		return false, fmt.Errorf("sqlite: acquire lease %q: %w: a lease needs a name, an owner and a positive ttl", name, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlite: acquire lease %q: %w", name, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(qAcquireLease, name, owner, toMicros(now.Add(ttl)), toMicros(now))
		return err
	})
	if err != nil {
		return false, fail(ctx, err, "acquire lease %q", name)
	}
	return n > 0, nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, name, owner string) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: release lease %q: %w", name, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		_, err := tx.exec(`DELETE FROM leases WHERE name = ? AND owner = ?`, name, owner)
		return err
	})
	if err != nil {
		return fail(ctx, err, "release lease %q", name)
	}
	return nil
}

// Holders implements lease.Store.
func (s *Store) Holders(ctx context.Context, prefix string, now time.Time) (map[string]string, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lease holders: %w", err)
	}
	st, err := d.read(ctx, `SELECT name, owner FROM leases WHERE substr(name, 1, length(?)) = ? AND expires_at > ?`)
	if err != nil {
		return nil, fail(ctx, err, "lease holders")
	}
	rows, err := st.QueryContext(ctx, prefix, prefix, toMicros(now))
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
