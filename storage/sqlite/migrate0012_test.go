package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/memrec"
)

// TestMigrateMemoryJobs: 0012 makes consolidation per person. The job of a session at version 11
// becomes the job of the user it named, cursor and pending state kept; another person's new job
// in that session starts at the old cursor (those messages were consolidated once already); a
// new session's jobs start at 0.
func TestMigrateMemoryJobs(t *testing.T) {
	ctx := context.Background()
	s := openAtVersion(t, 12, "0012_memory_jobs")
	d := s.st.Load()
	err := d.wr.do(ctx, true, func(tx *wtx) error {
		_, err := tx.w.conn.ExecContext(ctx, `INSERT INTO memory_sessions (session, user_id, channel, cursor, due_at, not_after, gen, worker, lease_until, attempts, last_error, updated_at)
VALUES ('slack:C1:1.0', 'slack:UB', 'slack:C1', 4, 1000, 2000, 3, 'old-worker', 1500, 1, 'model down', 900)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	ub, err := s.ConsolidationState(ctx, "slack:C1:1.0", "slack:UB")
	if err != nil || ub.Cursor != 4 || !ub.DueAt.Equal(fromMicros(1000)) || ub.Gen != 3 || ub.Worker != "" || !ub.LeaseUntil.IsZero() || ub.LastError != "model down" {
		t.Errorf("UB's job after 0012 = %+v, %v; want cursor 4, due as before, gen 3, no lease, the error kept", ub, err)
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		session, user string
		cursor        int64
	}{{"slack:C1:1.0", "slack:UA", 4}, {"slack:C2", "slack:UA", 0}} {
		if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: tt.session, UserID: tt.user, DueAt: at}, at); err != nil {
			t.Fatal(err)
		}
		st, err := s.ConsolidationState(ctx, tt.session, tt.user)
		if err != nil || st.Cursor != tt.cursor {
			t.Errorf("new job of %s in %s = %+v, %v; want cursor %d", tt.user, tt.session, st, err, tt.cursor)
		}
	}
}
