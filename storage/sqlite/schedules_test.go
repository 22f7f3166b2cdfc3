package sqlite

import (
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
