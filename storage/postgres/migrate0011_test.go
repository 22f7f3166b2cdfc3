package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

// TestMigrateUsageIndexes: a schema at version 10 with ledger entries keeps them through
// 0011, which drops the channel and agent indexes; sums by channel and agent are unchanged.
func TestMigrateUsageIndexes(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, postgres.Config{Schema: schema, MaxConns: 2})
	ctx := ctxT(t)
	if err := s.MigrateTo(ctx, 10); err != nil {
		t.Fatalf("migrate to 10: %v", err)
	}
	storagetest.RunUsageSumsAcrossMigration(t, s, s.Migrate)
	var idx int
	err := adminPool(t).QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = 'usage'
		AND indexname IN ('usage_by_channel', 'usage_by_agent')`, schema).Scan(&idx)
	if err != nil || idx != 0 {
		t.Errorf("channel and agent indexes of usage after 0011 = %d, %v; want 0", idx, err)
	}
}
