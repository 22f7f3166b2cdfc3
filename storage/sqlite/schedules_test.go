package sqlite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/storage/storagetest"
)

var _ schedule.Store = (*Store)(nil)

// openTwo opens two stores on one file, as two processes would (each with its own writer).
func openTwo(t *testing.T) (schedule.Store, schedule.Store) {
	p := filepath.Join(t.TempDir(), "echogate.db")
	return openTemp(t, Config{Path: p}), openTemp(t, Config{Path: p})
}

func TestScheduleConformance(t *testing.T) {
	storagetest.RunSchedules(t, openTwo)
}

func TestScheduler(t *testing.T) {
	storagetest.RunScheduler(t, openTwo)
}

func BenchmarkClaimSlot(b *testing.B) {
	storagetest.BenchClaimSlot(b, openTemp(b, Config{}))
}

// TestSchedulerChaos runs two processes on one SQLite file, SIGKILLed at random instants.
func TestSchedulerChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	p := filepath.Join(t.TempDir(), "echogate.db")
	storagetest.RunSchedulerChaos(t, openTemp(t, Config{Path: p}), "TestSchedulerChaosChild", []string{"ECHOGATE_SCHED_CHAOS_DB=" + p}, 2)
}

func TestSchedulerChaosChild(t *testing.T) {
	if !storagetest.ChaosChild() {
		t.Skip("a child of TestSchedulerChaos")
	}
	storagetest.SchedulerChaosChild(t, openTemp(t, Config{Path: os.Getenv("ECHOGATE_SCHED_CHAOS_DB")}))
}
