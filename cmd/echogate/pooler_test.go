package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// databasePaths are the ways a replica test reaches PostgreSQL: directly, and through PgBouncer
// in transaction mode (scripts/pg-test-cluster.sh start runs one and prints
// ECHOGATE_TEST_PGBOUNCER_URL).
var databasePaths = []string{"direct", "pgbouncer"}

// testDatabase returns the gateway environment for a database of this test's own reached by path
// (one of databasePaths): DATABASE_URL, and ECHOGATE_DATABASE_POOLER=transaction through
// PgBouncer. Directly it is a schema of its own (testPostgres); through PgBouncer, which does not
// carry search_path, a database of its own, dropped afterwards. Without ECHOGATE_TEST_PGBOUNCER_URL
// the pgbouncer path skips, or fails under CI.
func testDatabase(t *testing.T, path string) map[string]string {
	t.Helper()
	if path == "direct" {
		return map[string]string{"DATABASE_URL": testPostgres(t)}
	}
	through := os.Getenv("ECHOGATE_TEST_PGBOUNCER_URL")
	base := os.Getenv("ECHOGATE_TEST_DATABASE_URL")
	if base == "" {
		base = os.Getenv("DATABASE_URL")
	}
	if through == "" || base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but ECHOGATE_TEST_PGBOUNCER_URL or DATABASE_URL is not: start the test cluster with scripts/pg-test-cluster.sh start (it starts PgBouncer too)")
		}
		t.Skip("pgbouncer path skipped: set ECHOGATE_TEST_PGBOUNCER_URL and DATABASE_URL (scripts/pg-test-cluster.sh start prints them)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "replica_pb_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			// FORCE: PgBouncer keeps idle server connections to it.
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(through)
	if err != nil {
		t.Fatalf("ECHOGATE_TEST_PGBOUNCER_URL: %v", err)
	}
	u.Path = "/" + name
	return map[string]string{"DATABASE_URL": u.String(), "ECHOGATE_DATABASE_POOLER": "transaction"}
}
