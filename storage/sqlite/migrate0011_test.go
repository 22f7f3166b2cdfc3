package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/storagetest"
)

// TestMigrateUsageIndexes: a database at version 10 with ledger entries keeps them through
// 0011, which drops the channel and agent indexes; sums by channel and agent are unchanged.
func TestMigrateUsageIndexes(t *testing.T) {
	ctx := context.Background()
	s := openAtVersion(t, 11, "0011_usage_indexes")
	storagetest.RunUsageSumsAcrossMigration(t, s, s.Migrate)
	var idx int
	if err := s.st.Load().r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'usage'`).Scan(&idx); err != nil || idx != 4 {
		t.Errorf("indexes of usage after 0011 = %d, %v; want 4 (at, user, session, turn)", idx, err)
	}
}

// TestUsageQueriesUseAnIndex: every ledger query the budgets, /usage and the console make
// reads through an index, never the whole table, unless it is unbounded by time and by a
// selective key (an agent's or a channel's spend of all time).
func TestUsageQueriesUseAnIndex(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := context.Background()
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	next := day.AddDate(0, 0, 1)
	for name, tt := range map[string]struct {
		f     echogate.UsageFilter
		index string // "" means a full scan is expected
	}{
		"turn (per-turn budget, turn detail)": {echogate.UsageFilter{Turn: "t_1"}, "usage_by_turn"},
		"session (per-session budget)":        {echogate.UsageFilter{Session: "web:a"}, "usage_by_session"},
		"user's day (per-user budget)":        {echogate.UsageFilter{UserID: "web:u", Since: day, Until: next}, "usage_by_user"},
		"channel's day (per-channel budget)":  {echogate.UsageFilter{Channel: "slack:C1", Since: day, Until: next}, "usage_by_at"},
		"gateway day":                         {echogate.UsageFilter{Since: day, Until: next}, "usage_by_at"},
		"agent's session":                     {echogate.UsageFilter{Session: "web:a", Agent: "ops"}, "usage_by_session"},
		"agent's user day":                    {echogate.UsageFilter{UserID: "web:u", Agent: "ops", Since: day, Until: next}, "usage_by_user"},
		"agent's month":                       {echogate.UsageFilter{Agent: "ops", Since: day, Until: next.AddDate(0, 1, 0)}, "usage_by_at"},
		"console: agent since":                {echogate.UsageFilter{Agent: "ops", Since: day}, "usage_by_at"},
		"console: agent, all time":            {echogate.UsageFilter{Agent: "ops"}, ""},
	} {
		where, args := usageWhere(tt.f)
		rows, err := s.st.Load().r.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT coalesce(sum(cost_usd), 0.0) FROM usage`+where, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		got := strings.Join(plan, "; ")
		want := "SCAN usage"
		if tt.index != "" {
			want = "USING INDEX " + tt.index
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: plan of %s = %q, want %q", name, describeFilter(tt.f), got, want)
		}
	}
}
