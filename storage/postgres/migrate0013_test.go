package postgres_test

import (
	"context"
	"testing"

	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

// TestMigrateGrantsPerUser: grants written before 0013 (one per session and tool, whoever
// asked) become their granter's own: nobody else's calls of the tool run without asking.
func TestMigrateGrantsPerUser(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, postgres.Config{Schema: schema, MaxConns: 2})
	ctx := ctxT(t)
	if err := s.MigrateTo(ctx, 12); err != nil {
		t.Fatalf("migrate to 12: %v", err)
	}
	admin := adminPool(t)
	insertOld := func(ctx context.Context, session, tool, by string) error {
		_, err := admin.Exec(ctx, `INSERT INTO `+schema+`.grants (session, tool, granted_by, granted_at) VALUES ($1, $2, $3, now())`, session, tool, by)
		return err
	}
	storagetest.RunGrantsAcrossMigration(t, s, insertOld, s.Migrate)
}
