package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// MigrateTo applies the first n embedded migrations only (tests of one migration over a
// database populated at the version before it).
func (s *Store) MigrateTo(ctx context.Context, n int) error {
	ms, err := builtinMigrations()
	if err != nil {
		return err
	}
	return s.migrate(ctx, ms[:n])
}

// RenewLeases renews the session leases the store holds now (what its background loop does every
// LeaseTTL/3). Only for a store with Pooler "transaction".
func (s *Store) RenewLeases() error {
	p, err := s.conns(context.Background())
	if err != nil {
		return err
	}
	return p.leases.renew()
}

// SendAtomic exposes sendAtomic on the query pool, results discarded.
func (s *Store) SendAtomic(ctx context.Context, b *pgx.Batch) error {
	p, err := s.pool(ctx, "send atomic")
	if err != nil {
		return err
	}
	return sendAtomic(ctx, p, b, func(br pgx.BatchResults) error {
		for range b.Len() {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
}

// StopsChanged returns a channel closed at the stops watch's next change (live, or a stop
// learnt), and whether the watch is live now.
func (s *Store) StopsChanged() (<-chan struct{}, bool) {
	p, err := s.conns(context.Background())
	if err != nil || p.stops == nil {
		return nil, false
	}
	ch := p.stops.wait()
	p.stops.mu.Lock()
	defer p.stops.mu.Unlock()
	return ch, p.stops.live
}
