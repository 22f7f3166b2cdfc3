package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/echogate/echogate/storage/postgres"
)

// migrationRows returns the versions recorded in the schema's echogate_migrations.
func migrationRows(t *testing.T, schema string) []int {
	t.Helper()
	rows, err := adminPool(t).Query(ctxT(t), "SELECT version FROM "+pgx.Identifier{schema, "echogate_migrations"}.Sanitize()+" ORDER BY version")
	if err != nil {
		t.Fatalf("read migrations of %s: %v", schema, err)
	}
	v, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatalf("read migrations of %s: %v", schema, err)
	}
	return v
}

func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	// Two stores = two replicas starting at once on an empty schema.
	a := openStore(t, postgres.Config{Schema: schema, MaxConns: 2})
	b := openStore(t, postgres.Config{Schema: schema, MaxConns: 2})
	ctx := ctxT(t)

	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, st := range []*postgres.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = st.Migrate(ctx)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate #%d = %v, want nil", i, err)
		}
	}
	applied, known, err := a.SchemaVersion(ctx)
	if err != nil {
		t.Fatalf("SchemaVersion: %v", err)
	}
	if applied != known || known < 2 {
		t.Errorf("SchemaVersion = %d, %d, want applied == known >= 2", applied, known)
	}
	want := make([]int, known)
	for i := range want {
		want[i] = i + 1
	}
	if got := migrationRows(t, schema); !slices.Equal(got, want) {
		t.Errorf("applied migrations = %v, want %v (each exactly once)", got, want)
	}
	// Idempotent: a later start finds nothing to do.
	if err := b.Migrate(ctx); err != nil {
		t.Errorf("Migrate again = %v, want nil", err)
	}
	if got := migrationRows(t, schema); !slices.Equal(got, want) {
		t.Errorf("applied migrations after a second Migrate = %v, want %v", got, want)
	}
	// Both stores work on the migrated schema.
	for i, st := range []*postgres.Store{a, b} {
		if _, err := st.ClaimEvent(ctx, fmt.Sprintf("slack:E%d", i), []byte(`{}`), time.Time{}); err != nil {
			t.Errorf("store %d: ClaimEvent after Migrate = %v", i, err)
		}
	}
}

func TestSchemaVersionUnmigrated(t *testing.T) {
	t.Parallel()
	st := openStore(t, postgres.Config{Schema: newSchema(t)})
	applied, known, err := st.SchemaVersion(ctxT(t))
	if err != nil || applied != 0 || known < 2 {
		t.Errorf("SchemaVersion of a new schema = %d, %d, %v, want 0, >=2, nil", applied, known, err)
	}
}

func TestMigrateSchemaTooNew(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	st2 := openStore(t, postgres.Config{Schema: schema})
	ctx := ctxT(t)
	if err := st2.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := adminPool(t).Exec(ctx, "INSERT INTO "+pgx.Identifier{schema, "echogate_migrations"}.Sanitize()+
		" (version, name, applied_at) VALUES (999, '0999_future', now())"); err != nil {
		t.Fatal(err)
	}
	if err := st2.Migrate(ctx); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema = %v, want ErrSchemaTooNew", err)
	}
}

func TestMigrateCancelled(t *testing.T) {
	t.Parallel()
	st := openStore(t, postgres.Config{Schema: newSchema(t)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Migrate(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Migrate with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// TestMigrateWaitsForLock holds the migration lock elsewhere and checks that Migrate waits for it
// and gives up with ctx.
func TestMigrateWaitsForLock(t *testing.T) {
	t.Parallel()
	a := adminPool(t)
	ctx := ctxT(t)
	conn, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('echogate:migrate', 0))`); err != nil {
		t.Fatal(err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtextextended('echogate:migrate', 0))`); err != nil {
				t.Errorf("unlock: %v", err)
			}
		}
	}
	defer unlock()

	st := openStore(t, postgres.Config{Schema: newSchema(t)})
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := st.Migrate(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Migrate while the lock is held elsewhere = %v, want context.DeadlineExceeded", err)
	}
	unlock()
	if err := st.Migrate(ctx); err != nil {
		t.Errorf("Migrate after the lock is free = %v, want nil", err)
	}
}

func TestVectorRoundTrip(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	want := pgvector.NewVector([]float32{1, -2.5, 3.25})
	var got pgvector.Vector
	var dims int
	// Through the store's own pool: AfterConnect registered the types, so pgx uses the binary
	// codec for both the argument and the result.
	err := st.WithConn(ctx, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `CREATE TEMP TABLE vt (id int PRIMARY KEY, embedding vector(3))`); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, `INSERT INTO vt VALUES (1, $1)`, want); err != nil {
			return err
		}
		return c.QueryRow(ctx, `SELECT embedding, vector_dims(embedding) FROM vt WHERE id = 1`).Scan(&got, &dims)
	})
	if err != nil {
		t.Fatalf("vector round trip: %v", err)
	}
	if !slices.Equal(got.Slice(), want.Slice()) || dims != 3 {
		t.Errorf("vector(3) round trip = %v (%d dims), want %v (3 dims)", got.Slice(), dims, want.Slice())
	}
	// Nearest neighbour with the cosine operator works on the registered type.
	var dist float64
	err = st.WithConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT $1::vector(3) <=> $2::vector(3)`, want, pgvector.NewVector([]float32{2, -5, 6.5})).Scan(&dist)
	})
	if err != nil || dist > 1e-6 {
		t.Errorf("cosine distance of parallel vectors = %v, %v, want ~0, nil", dist, err)
	}
}

// TestFreshDatabase opens a store on a database without the vector extension (the pool's
// connections then skip the type registration), migrates it (which creates the extension and
// resets the pool) and checks that vectors work. It needs CREATEDB; it skips without it.
func TestFreshDatabase(t *testing.T) {
	t.Parallel()
	a := adminPool(t)
	ctx := ctxT(t)
	db := randomName("echogate_fresh_")
	if _, err := a.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Skipf("cannot create a scratch database (needs CREATEDB): %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := a.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("drop scratch database %s: %v", db, err)
		}
	})
	u, err := url.Parse(requireURL(t))
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skipf("DATABASE_URL is not a postgres:// URL; cannot derive a scratch database URL")
	}
	u.Path = "/" + db
	st := openStore(t, postgres.Config{URL: u.String(), MaxConns: 2})

	// Before Migrate: connections work, the vector type does not exist yet.
	var exists bool
	if err := st.WithConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT to_regtype('vector') IS NOT NULL`).Scan(&exists)
	}); err != nil || exists {
		t.Fatalf("vector type on a fresh database = %v, %v, want false, nil", exists, err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate on a fresh database: %v", err)
	}
	var ext string
	if err := st.WithConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&ext)
	}); err != nil {
		t.Fatalf("migration 1 did not create the vector extension: %v", err)
	}
	want := pgvector.NewVector([]float32{0.5, 0.25, 0.125})
	var got pgvector.Vector
	if err := st.WithConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT $1::vector(3)`, want).Scan(&got)
	}); err != nil {
		t.Fatalf("vector after Migrate (pool reset, types registered): %v", err)
	}
	if !slices.Equal(got.Slice(), want.Slice()) {
		t.Errorf("vector round trip on a fresh database = %v, want %v", got.Slice(), want.Slice())
	}
	t.Logf("pgvector %s", ext)
}
