package postgres

import "context"

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
