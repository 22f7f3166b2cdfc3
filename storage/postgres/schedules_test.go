package postgres_test

import (
	"os"
	"testing"

	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

var _ schedule.Store = (*postgres.Store)(nil)

// openReplicas opens two stores on one fresh schema: two replicas.
func openReplicas(t *testing.T) (schedule.Store, schedule.Store) {
	schema := newSchema(t)
	a := openStore(t, postgres.Config{Schema: schema, MaxConns: 8, MaxLockConns: 2})
	b := openStore(t, postgres.Config{Schema: schema, MaxConns: 8, MaxLockConns: 2})
	if err := a.Migrate(ctxT(t)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := b.Migrate(ctxT(t)); err != nil {
		t.Fatalf("Migrate (second replica): %v", err)
	}
	return a, b
}

func TestScheduleConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunSchedules(t, openReplicas)
}

func TestScheduler(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunScheduler(t, openReplicas)
}

func BenchmarkClaimSlot(b *testing.B) {
	storagetest.BenchClaimSlot(b, newStore(b))
}

// TestSchedulerChaos runs two replica processes on one schema, SIGKILLed at random instants.
func TestSchedulerChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	requireURL(t)
	schema := newSchema(t)
	st := openStore(t, postgres.Config{Schema: schema, MaxConns: 4, MaxLockConns: 1})
	if err := st.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	storagetest.RunSchedulerChaos(t, st, "TestSchedulerChaosChild", []string{"ECHOGATE_SCHED_CHAOS_SCHEMA=" + schema}, 2)
}

func TestSchedulerChaosChild(t *testing.T) {
	if !storagetest.ChaosChild() {
		t.Skip("a child of TestSchedulerChaos")
	}
	storagetest.SchedulerChaosChild(t, openStore(t, postgres.Config{Schema: os.Getenv("ECHOGATE_SCHED_CHAOS_SCHEMA"), MaxConns: 4, MaxLockConns: 1}))
}
