package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// UsageLedger is the part of a store the ledger migration check writes and sums.
type UsageLedger interface {
	RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error)
	SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error)
}

// RunUsageSumsAcrossMigration records ledger entries into s (a store whose schema predates a
// change of the usage table's indexes), runs migrate, and checks that sums by channel and by
// agent, with and without a time range, are what they were written as.
func RunUsageSumsAcrossMigration(t *testing.T, s UsageLedger, migrate func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
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
	if err := migrate(ctx); err != nil {
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
			t.Errorf("SumUsage(%+v) after the migration = %v, %v; want cost %v", tt.f, got.CostUSD, err, tt.want)
		}
	}
}
