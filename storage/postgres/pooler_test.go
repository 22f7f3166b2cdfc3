package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

// pgbouncerURL returns ECHOGATE_TEST_PGBOUNCER_URL, a PgBouncer in transaction mode in front of
// the test cluster (scripts/pg-test-cluster.sh start prints it), or skips the test; under CI it
// fails instead: the store must be tested through a pooler there.
func pgbouncerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("ECHOGATE_TEST_PGBOUNCER_URL")
	if u == "" {
		if inCI() {
			t.Fatal("CI is set but ECHOGATE_TEST_PGBOUNCER_URL is not: start the test cluster with `eval \"$(scripts/pg-test-cluster.sh start)\"` (it starts PgBouncer too; .ci/run does)")
		}
		t.Skip("pooler tests skipped: set ECHOGATE_TEST_PGBOUNCER_URL (scripts/pg-test-cluster.sh start prints it)")
	}
	return u
}

// newPoolerDatabase creates a database of the test's own on the cluster (PgBouncer 1.18 cannot
// carry a schema's search_path) and returns its URL through the pooler; the database is dropped
// when the test ends.
func newPoolerDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, pgbouncerURL(t), "echogate_pb_", "ECHOGATE_TEST_PGBOUNCER_URL")
}

// newDatabase creates a database named prefix… on the cluster, dropped when the test ends, and
// returns base (a URL of that cluster, named by what in errors) with its path set to it.
func newDatabase(t testing.TB, base, prefix, what string) string {
	t.Helper()
	a := adminPool(t)
	name := randomName(prefix)
	if _, err := a.Exec(ctxT(t), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE: a pooler keeps idle server connections to it.
		if _, err := a.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	u.Path = "/" + name
	return u.String()
}

// newPooledStore returns an open, migrated store on dbURL (through the pooler) with
// database.pooler: transaction.
func newPooledStore(t testing.TB, dbURL string, cfg postgres.Config) *postgres.Store {
	t.Helper()
	cfg.URL, cfg.Pooler = dbURL, postgres.PoolerTransaction
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 8
	}
	st := openStore(t, cfg)
	if err := st.Migrate(ctxT(t)); err != nil {
		t.Fatalf("Migrate through the pooler: %v", err)
	}
	return st
}

// TestPoolerSymptomNamesTheSetting: without database.pooler, the store's named prepared
// statements collide on the pooler's shared server connections; the error says what to set.
func TestPoolerSymptomNamesTheSetting(t *testing.T) {
	t.Parallel()
	st := openStore(t, postgres.Config{URL: newPoolerDatabase(t), MaxConns: 4})
	ctx := ctxT(t)
	// Two client connections at once: the second is handed the server connection the first
	// prepared its statements on.
	err := st.WithConn(ctx, func(*pgx.Conn) error {
		return st.WithConn(ctx, func(c *pgx.Conn) error { return c.Ping(ctx) })
	})
	if err == nil || !strings.Contains(err.Error(), "database.pooler: transaction") {
		t.Fatalf("two connections through PgBouncer without database.pooler: err = %v, want one naming database.pooler: transaction", err)
	}
}

// TestConformanceThroughPgBouncer runs the conformance suites on one store through PgBouncer in
// transaction mode (database.pooler: transaction), as replicas behind a managed pooler run.
func TestConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel()
	db := newPoolerDatabase(t)
	st := newPooledStore(t, db, postgres.Config{})
	t.Run("Store", func(t *testing.T) {
		storagetest.Run(t, func(*testing.T) storagetest.Store { return st })
	})
	t.Run("Checkpoints", func(t *testing.T) {
		storagetest.RunCheckpoints(t, func(*testing.T) storagetest.CheckpointStore { return st })
	})
	t.Run("Memory", func(t *testing.T) {
		storagetest.RunMemory(t, func(*testing.T) storagetest.MemoryStore { return st })
	})
	t.Run("Schedules", func(t *testing.T) {
		storagetest.RunSchedules(t, func(t *testing.T) (schedule.Store, schedule.Store) {
			db := newPoolerDatabase(t)
			return newPooledStore(t, db, postgres.Config{}), newPooledStore(t, db, postgres.Config{})
		})
	})
}

// TestMigrateThroughPgBouncerConcurrently: three replicas migrating one database at once through
// the pooler apply each migration once (the lock is a transaction's, not a connection's).
func TestMigrateThroughPgBouncerConcurrently(t *testing.T) {
	t.Parallel()
	db := newPoolerDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		st := openStore(t, postgres.Config{URL: db, Pooler: postgres.PoolerTransaction, MaxConns: 3})
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- st.Migrate(ctxT(t))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate through the pooler = %v, want nil", err)
		}
	}
}

// TestSessionLeasesThroughPgBouncer: TryLockSession through a transaction pooler is a lease:
// exclusive across replicas, released by unlock, renewed while held, taken over once expired.
func TestSessionLeasesThroughPgBouncer(t *testing.T) {
	t.Parallel()
	db := newPoolerDatabase(t)
	replica1 := newPooledStore(t, db, postgres.Config{})
	replica2 := newPooledStore(t, db, postgres.Config{})
	ctx := ctxT(t)
	a, b := echogate.SessionKey("slack:C1:1"), echogate.SessionKey("slack:C2:1")

	unlockA, ok, err := replica1.TryLockSession(ctx, a)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(a) on replica 1 = %v, %v, want true, nil", ok, err)
	}
	if _, ok, err := replica2.TryLockSession(ctx, a); err != nil || ok {
		t.Errorf("TryLockSession(a) on replica 2 while replica 1 holds it = %v, %v, want false, nil", ok, err)
	}
	if _, ok, err := replica1.TryLockSession(ctx, a); err != nil || ok {
		t.Errorf("TryLockSession(a) again on replica 1 = %v, %v, want false, nil", ok, err)
	}
	unlockB, ok, err := replica2.TryLockSession(ctx, b)
	if err != nil || !ok {
		t.Errorf("TryLockSession(b) on replica 2 = %v, %v, want true, nil (another session)", ok, err)
	}
	unlockA()
	unlockA()
	unlockA2, ok, err := replica2.TryLockSession(ctx, a)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(a) on replica 2 after unlock = %v, %v, want true, nil", ok, err)
	}

	// Renewal: a lease about to expire is extended by its owner's renewal.
	expire := func(key echogate.SessionKey, by string) {
		t.Helper()
		err := replica1.WithConn(ctx, func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, "UPDATE session_leases SET expires_at = now() + $2::interval WHERE session = $1", string(key), by)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	expire(a, "-1 second")
	if err := replica2.RenewLeases(); err != nil {
		t.Fatalf("RenewLeases: %v", err)
	}
	if _, ok, err := replica1.TryLockSession(ctx, a); err != nil || ok {
		t.Errorf("TryLockSession(a) on replica 1 after replica 2 renewed it = %v, %v, want false, nil", ok, err)
	}

	// Takeover: replica 2 stops renewing (a kill); once the lease expired, replica 1 takes it.
	expire(a, "-1 second")
	unlockA1, ok, err := replica1.TryLockSession(ctx, a)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(a) on replica 1 after replica 2's lease expired = %v, %v, want true, nil", ok, err)
	}
	// The old owner's late unlock must not free the new owner's lease.
	unlockA2()
	if _, ok, err := replica2.TryLockSession(ctx, a); err != nil || ok {
		t.Errorf("TryLockSession(a) on replica 2 after its stale unlock = %v, %v, want false, nil (replica 1 owns it)", ok, err)
	}
	unlockA1()
	unlockB()
}

// TestTryLockSessionThroughPgBouncerCancelled: a cancelled context fails the lease with ctx's
// error and leaves nothing held.
func TestTryLockSessionThroughPgBouncerCancelled(t *testing.T) {
	t.Parallel()
	db := newPoolerDatabase(t)
	st := newPooledStore(t, db, postgres.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, err := st.TryLockSession(ctx, "web:x"); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryLockSession(cancelled ctx) = %v, %v, want false, context.Canceled", ok, err)
	}
	unlock, ok, err := st.TryLockSession(ctxT(t), "web:x")
	if err != nil || !ok {
		t.Fatalf("TryLockSession after a cancelled attempt = %v, %v, want true, nil", ok, err)
	}
	unlock()
}

// TestStopsThroughPgBouncer: through a transaction pooler (no LISTEN) RecentStops polls the
// table: a stop stored by one replica is seen by the other at once.
func TestStopsThroughPgBouncer(t *testing.T) {
	t.Parallel()
	db := newPoolerDatabase(t)
	a := newPooledStore(t, db, postgres.Config{})
	b := newPooledStore(t, db, postgres.Config{})
	ctx := ctxT(t)
	if err := a.RequestStop(ctx, "web:s1", "web:u1"); err != nil {
		t.Fatalf("RequestStop through the pooler: %v", err)
	}
	stops, err := b.RecentStops(ctx, 3*time.Second)
	if err != nil || len(stops) != 1 || stops[0].Session != "web:s1" {
		t.Fatalf("RecentStops on the other replica = %+v, %v, want the one stop of web:s1", stops, err)
	}
}
