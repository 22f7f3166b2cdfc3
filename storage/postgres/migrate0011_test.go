package postgres_test

import (
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/postgres"
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
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range []struct {
		channel, agent string
		cost           float64
	}{{"slack:C1", "ops", 0.25}, {"slack:C1", "docs", 0.5}, {"slack:C2", "ops", 1}} {
		_, err := s.RecordUsage(ctx, echogate.UsageRecord{Turn: "t_1", Session: "slack:C1:1", UserID: "slack:U1", Channel: r.channel, Agent: r.agent,
			Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "m", InputTokens: 10, CostUSD: r.cost}, At: base.Add(time.Duration(i) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for _, tt := range []struct {
		f    echogate.UsageFilter
		want float64
	}{
		{echogate.UsageFilter{Channel: "slack:C1"}, 0.75},
		{echogate.UsageFilter{Channel: "slack:C1", Since: base.Add(time.Hour), Until: base.Add(24 * time.Hour)}, 0.5},
		{echogate.UsageFilter{Agent: "ops"}, 1.25},
		{echogate.UsageFilter{Agent: "ops", Since: base, Until: base.Add(2 * time.Hour)}, 0.25},
	} {
		if got, err := s.SumUsage(ctx, tt.f); err != nil || got.CostUSD != tt.want {
			t.Errorf("SumUsage(%+v) after 0011 = %v, %v; want cost %v", tt.f, got.CostUSD, err, tt.want)
		}
	}
	var idx int
	err := adminPool(t).QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = 'usage'
		AND indexname IN ('usage_by_channel', 'usage_by_agent')`, schema).Scan(&idx)
	if err != nil || idx != 0 {
		t.Errorf("channel and agent indexes of usage after 0011 = %d, %v; want 0", idx, err)
	}
}
