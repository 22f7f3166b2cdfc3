package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

func TestRenewClaimsConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunRenewClaims(t, func(t *testing.T) storagetest.Renewer { return newStore(t) })
}

// TestRenewClaimsRoundTrips: no keys make no round trip; many keys make one statement per chunk.
func TestRenewClaimsRoundTrips(t *testing.T) {
	t.Parallel()
	requireURL(t)
	tc := &tripCounter{}
	st := openStore(t, postgres.Config{Schema: newSchema(t), MaxConns: 4, MaxLockConns: 1, Tracer: tc})
	ctx := ctxT(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 2*postgres.RenewChunk+1)
	for i := range keys {
		keys[i] = fmt.Sprintf("trips:%d", i)
	}
	// The first statement on a connection may look types up (and prepares): counted from the second.
	if _, err := st.RenewClaims(ctx, keys[:1], time.Time{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		keys  []string
		trips int
	}{{nil, 0}, {keys[:1], 1}, {keys, 3}} {
		tc.reset()
		if _, err := st.RenewClaims(ctx, tt.keys, time.Time{}); err != nil {
			t.Fatalf("RenewClaims(%d keys): %v", len(tt.keys), err)
		}
		if n, sql := tc.get(); n != tt.trips {
			t.Errorf("RenewClaims(%d keys) made %d round trips (%v), want %d", len(tt.keys), n, sql, tt.trips)
		}
	}
	// A cancelled renewal reports the cancellation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.RenewClaims(cctx, keys[:1], time.Time{}); !errors.Is(err, context.Canceled) {
		t.Errorf("RenewClaims(cancelled) = %v, want context.Canceled", err)
	}
}

// TestRenewClaimsPooled: the statement carries its keys as a pooler's connections need
// (database.pooler: transaction, no named prepared statements), on a direct connection to a
// database of the test's own here and through PgBouncer below.
func TestRenewClaimsPooled(t *testing.T) {
	t.Parallel()
	direct, err := url.Parse(requireURL(t))
	if err != nil {
		t.Fatal(err)
	}
	name := randomName("echogate_rn_")
	a := adminPool(t)
	if _, err := a.Exec(ctxT(t), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := a.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	direct.Path = "/" + name
	storagetest.RunRenewClaims(t, func(t *testing.T) storagetest.Renewer {
		return newPooledStore(t, direct.String(), postgres.Config{MaxConns: 4})
	})
}

func TestRenewClaimsThroughPgBouncer(t *testing.T) {
	t.Parallel()
	db := newPoolerDatabase(t)
	storagetest.RunRenewClaims(t, func(t *testing.T) storagetest.Renewer { return newPooledStore(t, db, postgres.Config{}) })
}
