package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echogate/echogate/storage/postgres"
)

const skipMsg = "postgres tests skipped: set DATABASE_URL=postgres://… (see scripts/pg-test-cluster.sh) to run them"

// databaseURL returns the URL of the test database: ECHOGATE_TEST_DATABASE_URL, else DATABASE_URL.
func databaseURL() string {
	for _, k := range []string{"ECHOGATE_TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// requireURL returns the test database URL, or skips the test (fails it in CI: the Postgres tests
// must run there).
func requireURL(t testing.TB) string {
	t.Helper()
	u := databaseURL()
	if u == "" {
		if inCI() {
			t.Fatal("postgres tests must run in CI but neither DATABASE_URL nor ECHOGATE_TEST_DATABASE_URL is set: start a cluster with `eval \"$(scripts/pg-test-cluster.sh start)\"` (.ci/run does)")
		}
		t.Skip(skipMsg)
	}
	return u
}

var (
	adminOnce sync.Once
	admin     *pgxpool.Pool
	adminErr  error
)

// adminPool is a plain pool on the test database for setup and cleanup (no schema, no types).
// The first call makes sure the vector extension lives in public, where every test schema's
// search_path finds it.
func adminPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := requireURL(t)
	adminOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, adminErr = pgxpool.New(ctx, u)
		if adminErr != nil {
			return
		}
		adminErr = pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
			// The same lock Migrate takes, so this never races a migration's CREATE EXTENSION.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('echogate:migrate', 0))`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public`); err != nil {
				return fmt.Errorf("create extension vector (is pgvector installed? run scripts/pg-test-cluster.sh install): %w", err)
			}
			var schema string
			if err := tx.QueryRow(ctx, `SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'`).Scan(&schema); err != nil {
				return err
			}
			if schema != "public" {
				return fmt.Errorf("the vector extension lives in schema %q; the tests need it in public (DROP EXTENSION vector and rerun)", schema)
			}
			return nil
		})
	})
	if adminErr != nil {
		t.Fatalf("postgres test setup on %s: %v", redact(u), adminErr)
	}
	return admin
}

func redact(u string) string {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return "(unparsable DATABASE_URL)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newSchema reserves a schema name for one test and drops the schema when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	a := adminPool(t)
	schema := randomName("echogate_t_")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := a.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	return schema
}

// openStore opens a store on schema (not migrated) and closes it when the test ends.
func openStore(t testing.TB, cfg postgres.Config) *postgres.Store {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = requireURL(t)
	}
	st, err := postgres.New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

// newStore returns an open, migrated store in a fresh schema of its own, so tests run in parallel
// against one database.
func newStore(t testing.TB) *postgres.Store {
	t.Helper()
	st := openStore(t, postgres.Config{Schema: newSchema(t), MaxConns: 8, MaxLockConns: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return st
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		cfg     postgres.Config
		wantErr string // substring; empty means valid
	}{
		"valid url":               {postgres.Config{URL: "postgres://u:p@db.example:5432/echo?sslmode=require"}, ""},
		"valid postgresql url":    {postgres.Config{URL: "postgresql://u@localhost/echo"}, ""},
		"valid dsn":               {postgres.Config{URL: "host=localhost dbname=echo user=u"}, ""},
		"valid schema":            {postgres.Config{URL: "postgres://localhost/echo", Schema: "echogate_1"}, ""},
		"empty url":               {postgres.Config{}, "DATABASE_URL"},
		"blank url":               {postgres.Config{URL: "   "}, "DATABASE_URL"},
		"mysql url":               {postgres.Config{URL: "mysql://u:p@host/db"}, `scheme "mysql"`},
		"bad port":                {postgres.Config{URL: "postgres://u:secret@host:notaport/db"}, "config url"},
		"bad sslmode":             {postgres.Config{URL: "postgres://u:secret@host/db?sslmode=bogus"}, "sslmode"},
		"negative max conns":      {postgres.Config{URL: "postgres://localhost/db", MaxConns: -1}, "max conns"},
		"negative lock conns":     {postgres.Config{URL: "postgres://localhost/db", MaxLockConns: -2}, "max lock conns"},
		"schema with capitals":    {postgres.Config{URL: "postgres://localhost/db", Schema: "Echo"}, "config schema"},
		"schema with quote":       {postgres.Config{URL: "postgres://localhost/db", Schema: `a"b`}, "config schema"},
		"schema pg_":              {postgres.Config{URL: "postgres://localhost/db", Schema: "pg_echo"}, "reserved"},
		"negative timeout":        {postgres.Config{URL: "postgres://localhost/db", ConnectTimeout: -time.Second}, "connect timeout"},
		"negative lifetime":       {postgres.Config{URL: "postgres://localhost/db", MaxConnLifetime: -time.Second}, "lifetime"},
		"negative idle time":      {postgres.Config{URL: "postgres://localhost/db", MaxConnIdleTime: -time.Second}, "idle time"},
		"schema too long (64 b)":  {postgres.Config{URL: "postgres://localhost/db", Schema: strings.Repeat("a", 64)}, "config schema"},
		"pooler transaction":      {postgres.Config{URL: "postgres://localhost/db", Pooler: "transaction"}, ""},
		"pooler none":             {postgres.Config{URL: "postgres://localhost/db", Pooler: "none"}, ""},
		"pooler statement":        {postgres.Config{URL: "postgres://localhost/db", Pooler: "statement"}, "database.pooler"},
		"pooler with schema":      {postgres.Config{URL: "postgres://localhost/db", Pooler: "transaction", Schema: "echo"}, "search_path"},
		"pooler with search_path": {postgres.Config{URL: "postgres://localhost/db?search_path=echo", Pooler: "transaction"}, "search_path"},
		"pooler with one conn":    {postgres.Config{URL: "postgres://localhost/db", Pooler: "transaction", MaxConns: 1}, "2 or more"},
		"negative lease ttl":      {postgres.Config{URL: "postgres://localhost/db", LeaseTTL: -time.Second}, "lease ttl"},
	} {
		st, err := postgres.New(tt.cfg, nil)
		if tt.wantErr == "" {
			if err != nil || st == nil {
				t.Errorf("%s: New = %v, %v, want a store", name, st, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: New = nil error, want one containing %q", name, tt.wantErr)
			continue
		}
		if !errors.Is(err, postgres.ErrInvalid) {
			t.Errorf("%s: New error %q does not wrap ErrInvalid", name, err)
		}
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: New error = %q, want it to contain %q", name, err, tt.wantErr)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: New error %q leaks the password", name, err)
		}
	}
}

func TestTarget(t *testing.T) {
	t.Parallel()
	st, err := postgres.New(postgres.Config{URL: "postgres://me:hunter2@db.internal:6543/echo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Target(), "db.internal:6543/echo"; got != want {
		t.Errorf("Target() = %q, want %q", got, want)
	}
}

func TestNotOpenAndClosed(t *testing.T) {
	t.Parallel()
	st, err := postgres.New(postgres.Config{URL: "postgres://127.0.0.1:1/none"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.GetSession(ctx, "k"); !errors.Is(err, postgres.ErrNotOpen) {
		t.Errorf("GetSession before Open = %v, want ErrNotOpen", err)
	}
	if err := st.Migrate(ctx); !errors.Is(err, postgres.ErrNotOpen) {
		t.Errorf("Migrate before Open = %v, want ErrNotOpen", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("Close of a never opened store = %v, want nil", err)
	}
	if err := st.Open(ctx); !errors.Is(err, postgres.ErrClosed) {
		t.Errorf("Open after Close = %v, want ErrClosed", err)
	}
	if _, err := st.ClaimEvent(ctx, "k", nil, time.Time{}); !errors.Is(err, postgres.ErrClosed) {
		t.Errorf("ClaimEvent after Close = %v, want ErrClosed", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	// Port 1 on loopback: nothing listens, the connection is refused at once.
	st, err := postgres.New(postgres.Config{URL: "postgres://u:topsecret@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Open(context.Background())
	if err == nil {
		st.Close()
		t.Fatal("Open on a closed port = nil, want an error")
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1/none") || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("Open error = %q, want it to name the target and not leak the password", err)
	}
}
