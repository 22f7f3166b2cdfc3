package postgres_test

import (
	"context"
	"errors"
	"fmt"
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
	direct := newDatabase(t, requireURL(t), "echogate_rn_", "ECHOGATE_TEST_DATABASE_URL")
	storagetest.RunRenewClaims(t, func(t *testing.T) storagetest.Renewer {
		return newPooledStore(t, direct, postgres.Config{MaxConns: 4})
	})
}

func TestRenewClaimsThroughPgBouncer(t *testing.T) {
	t.Parallel()
	db := newPoolerDatabase(t)
	storagetest.RunRenewClaims(t, func(t *testing.T) storagetest.Renewer { return newPooledStore(t, db, postgres.Config{}) })
}

// TestRenewClaimsSkipsRowsBeingWritten: a renewal does not wait for an event's row that another
// transaction holds (a lane's group completing or claiming it): it renews the others and leaves
// that one to the next renewal. Waiting made the renewal and a group of several turns' ends
// deadlock (seen at 1000 sessions: a second's stall of both each time).
func TestRenewClaimsSkipsRowsBeingWritten(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	for _, k := range []string{"skip:held", "skip:free"} {
		if _, err := st.ClaimEvent(ctx, k, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	locked := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- st.WithConn(ctx, func(c *pgx.Conn) error {
			tx, err := c.Begin(ctx)
			if err != nil {
				locked <- err
				return err
			}
			defer tx.Rollback(ctx)
			_, err = tx.Exec(ctx, `UPDATE events SET completed_at = now() WHERE key = 'skip:held'`)
			locked <- err
			<-release
			return err
		})
	}()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	n, err := st.RenewClaims(rctx, []string{"skip:held", "skip:free"}, time.Time{})
	cancel()
	close(release)
	if err != nil || n != 1 {
		t.Errorf("RenewClaims with one row held by another transaction = %d, %v; want 1 renewed at once", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
