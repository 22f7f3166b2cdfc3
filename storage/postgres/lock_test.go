package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

func TestTryLockSession(t *testing.T) {
	t.Parallel()
	// Two stores on one database stand for two replicas. Session keys are unique per test run,
	// because advisory locks are database-wide, not per schema.
	replica1 := newStore(t)
	replica2 := openStore(t, postgres.Config{MaxLockConns: 2})
	ctx := ctxT(t)
	a := echogate.SessionKey(randomName("slack:C1:"))
	b := echogate.SessionKey(randomName("slack:C2:"))

	unlockA, ok, err := replica1.TryLockSession(ctx, a)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(a) on replica 1 = %v, %v, want true, nil", ok, err)
	}
	if _, ok, err := replica2.TryLockSession(ctx, a); err != nil || ok {
		t.Errorf("TryLockSession(a) on replica 2 while replica 1 holds it = %v, %v, want false, nil", ok, err)
	}
	// A second caller in the same process does not get it either.
	if _, ok, err := replica1.TryLockSession(ctx, a); err != nil || ok {
		t.Errorf("TryLockSession(a) again on replica 1 = %v, %v, want false, nil", ok, err)
	}
	unlockB, ok, err := replica2.TryLockSession(ctx, b)
	if err != nil || !ok {
		t.Errorf("TryLockSession(b) on replica 2 = %v, %v, want true, nil (another session)", ok, err)
	}

	unlockA()
	unlockA() // idempotent
	unlockA2, ok, err := replica2.TryLockSession(ctx, a)
	if err != nil || !ok {
		t.Fatalf("TryLockSession(a) on replica 2 after unlock = %v, %v, want true, nil", ok, err)
	}
	unlockA2()
	unlockB()
}

func TestTryLockSessionContention(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	key := echogate.SessionKey(randomName("web:"))
	const workers = 8
	var (
		holders, maxHolders atomic.Int32
		wins                atomic.Int32
		wg                  sync.WaitGroup
		start               = make(chan struct{})
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 20 {
				unlock, ok, err := st.TryLockSession(ctx, key)
				if err != nil {
					t.Errorf("TryLockSession = %v", err)
					return
				}
				if !ok {
					continue
				}
				wins.Add(1)
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				holders.Add(-1)
				unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := maxHolders.Load(); got != 1 {
		t.Errorf("max simultaneous holders of one session lock = %d, want 1", got)
	}
	if wins.Load() == 0 {
		t.Errorf("no worker ever got the lock")
	}
}

func TestTryLockSessionErrors(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	unlock, ok, err := st.TryLockSession(ctx, "")
	if !errors.Is(err, postgres.ErrInvalid) || ok || unlock == nil {
		t.Errorf("TryLockSession(\"\") = %v, %v, nil unlock %v, want ErrInvalid, false, a no-op unlock", err, ok, unlock == nil)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	unlock, ok, err = st.TryLockSession(cancelled, "web:x")
	if !errors.Is(err, context.Canceled) || ok || unlock == nil {
		t.Errorf("TryLockSession(cancelled ctx) = %v, %v, want context.Canceled, false, a no-op unlock", err, ok)
	}
	unlock()
}

// TestTryLockSessionMultiplexed: locks are multiplexed over the lock connections, so far more
// sessions than MaxLockConns are locked at once (each running turn used to pin a connection, which
// capped a replica at 16 turns at a time), queries still run on their own pool, another replica
// gets none of them, and each is free again once unlocked.
func TestTryLockSessionMultiplexed(t *testing.T) {
	t.Parallel()
	st := openStore(t, postgres.Config{Schema: newSchema(t), MaxConns: 2, MaxLockConns: 1})
	other := openStore(t, postgres.Config{MaxLockConns: 2})
	ctx := ctxT(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var keys []echogate.SessionKey
	var unlocks []func()
	for range 40 {
		k := echogate.SessionKey(randomName("web:"))
		unlock, ok, err := st.TryLockSession(ctx, k)
		if err != nil || !ok {
			t.Fatalf("TryLockSession of session %d with 1 lock connection = %v, %v, want true, nil", len(keys), ok, err)
		}
		keys, unlocks = append(keys, k), append(unlocks, unlock)
	}
	if _, err := st.ClaimEvent(ctx, "web:e1", nil, time.Now()); err != nil {
		t.Errorf("ClaimEvent while 40 locks are held = %v, want nil", err)
	}
	for i, k := range keys {
		if _, ok, err := st.TryLockSession(ctx, k); err != nil || ok {
			t.Errorf("TryLockSession(%d) again in the same process = %v, %v, want false, nil", i, ok, err)
		}
		if _, ok, err := other.TryLockSession(ctx, k); err != nil || ok {
			t.Errorf("TryLockSession(%d) on another replica while held = %v, %v, want false, nil", i, ok, err)
		}
	}
	for _, u := range unlocks {
		u()
	}
	for i, k := range keys {
		unlock, ok, err := other.TryLockSession(ctx, k)
		if err != nil || !ok {
			t.Errorf("TryLockSession(%d) on another replica after unlock = %v, %v, want true, nil", i, ok, err)
		}
		unlock()
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok, err := st.TryLockSession(cancelled, keys[0]); !errors.Is(err, context.Canceled) || ok {
		t.Errorf("TryLockSession(cancelled ctx) = %v, %v, want context.Canceled", ok, err)
	}
	if unlock, ok, err := st.TryLockSession(ctx, keys[0]); err != nil || !ok {
		t.Errorf("TryLockSession after a cancelled attempt = %v, %v, want true, nil (nothing left reserved)", ok, err)
	} else {
		unlock()
	}
}

// TestPendingLockerConformance: the lock that reads the paused turn, directly and through a
// transaction pooler (leases).
func TestPendingLockerConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	t.Run("Direct", func(t *testing.T) {
		storagetest.RunPendingLocker(t, func(t *testing.T) (storagetest.PendingLocker, storagetest.PendingLocker) {
			r := replicas(t, 2)
			return r[0], r[1]
		})
	})
	t.Run("Pooler", func(t *testing.T) {
		storagetest.RunPendingLocker(t, func(t *testing.T) (storagetest.PendingLocker, storagetest.PendingLocker) {
			db := newPoolerDatabase(t)
			a := newPooledStore(t, db, postgres.Config{})
			return a, newPooledStore(t, db, postgres.Config{})
		})
	})
}

// TestLockWithPendingIsOneRoundTrip: taking a session's lock and reading its paused turn is
// one round trip.
func TestLockWithPendingIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	tc := &tripCounter{}
	st := openStore(t, postgres.Config{Schema: newSchema(t), MaxConns: 4, MaxLockConns: 1, Tracer: tc})
	ctx := ctxT(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key := echogate.SessionKey(randomName("web:lockpend:"))
	for i := range 3 { // the first prepares the statements
		tc.reset()
		unlock, ok, _, _, err := st.TryLockSessionPending(ctx, key, "ev:"+string(key))
		if err != nil || !ok {
			t.Fatalf("TryLockSessionPending #%d = %v, %v", i, ok, err)
		}
		n, sql := tc.get()
		unlock()
		if i > 0 && n != 1 {
			t.Errorf("TryLockSessionPending #%d: %d round trips %v, want 1", i, n, sql)
		}
	}
}
