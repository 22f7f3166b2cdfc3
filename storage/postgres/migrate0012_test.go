package postgres_test

import (
	"testing"
	"time"

	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/storage/postgres"
)

// TestMigrateMemoryJobs: 0012 makes consolidation per person. The job of a session at version 11
// becomes the job of the user it named, cursor and pending state kept; another person's new job
// in that session starts at the old cursor; a new session's jobs start at 0.
func TestMigrateMemoryJobs(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, postgres.Config{Schema: schema, MaxConns: 2})
	ctx := ctxT(t)
	if err := s.MigrateTo(ctx, 11); err != nil {
		t.Fatalf("migrate to 11: %v", err)
	}
	due := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := adminPool(t).Exec(ctx, `INSERT INTO `+schema+`.memory_sessions (session, user_id, channel, cursor, due_at, not_after, gen, worker, lease_until, attempts, last_error, updated_at)
VALUES ('slack:C1:1.0', 'slack:UB', 'slack:C1', 4, $1, $1, 3, 'old-worker', $1, 1, 'model down', $1)`, due)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	ub, err := s.ConsolidationState(ctx, "slack:C1:1.0", "slack:UB")
	if err != nil || ub.Cursor != 4 || !ub.DueAt.Equal(due) || ub.Gen != 3 || ub.Worker != "" || !ub.LeaseUntil.IsZero() || ub.LastError != "model down" {
		t.Errorf("UB's job after 0012 = %+v, %v; want cursor 4, due as before, gen 3, no lease, the error kept", ub, err)
	}
	for _, tt := range []struct {
		session, user string
		cursor        int64
	}{{"slack:C1:1.0", "slack:UA", 4}, {"slack:C2", "slack:UA", 0}} {
		if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: tt.session, UserID: tt.user, DueAt: due}, due); err != nil {
			t.Fatal(err)
		}
		st, err := s.ConsolidationState(ctx, tt.session, tt.user)
		if err != nil || st.Cursor != tt.cursor {
			t.Errorf("new job of %s in %s = %+v, %v; want cursor %d", tt.user, tt.session, st, err, tt.cursor)
		}
	}
}
