package sqlite

import (
	"context"
	"testing"

	"github.com/echogate/echogate/storage/storagetest"
)

// TestMigrateGrantsPerUser: grants written before 0013 (one per session and tool, whoever
// asked) become their granter's own: nobody else's calls of the tool run without asking.
func TestMigrateGrantsPerUser(t *testing.T) {
	s := openAtVersion(t, 13, "0013_grants_per_user")
	d := s.st.Load()
	insertOld := func(ctx context.Context, session, tool, by string) error {
		return d.wr.do(ctx, true, func(tx *wtx) error {
			_, err := tx.w.conn.ExecContext(ctx, `INSERT INTO grants (session, tool, granted_by, granted_at) VALUES (?, ?, ?, 1000)`, session, tool, by)
			return err
		})
	}
	storagetest.RunGrantsAcrossMigration(t, s, insertOld, s.Migrate)
}
