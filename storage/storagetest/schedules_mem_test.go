package storagetest_test

import (
	"testing"

	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
	"github.com/echogate/echogate/storage/storagetest"
)

// The pipeline's tests use scheduletest.MemStore in place of a real store: it passes the
// suite the real stores pass.
func openMem(*testing.T) (schedule.Store, schedule.Store) {
	m := scheduletest.NewMemStore(nil)
	return m, m
}

func TestMemStoreSchedules(t *testing.T) { storagetest.RunSchedules(t, openMem) }

func TestMemStoreScheduler(t *testing.T) { storagetest.RunScheduler(t, openMem) }
