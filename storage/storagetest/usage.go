// The usage ledger's part of Run: records, listing and sums by filter.

package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

func (r *runner) usageRecordList(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	user := u.key("user")
	recs := []echogate.UsageRecord{
		{Turn: u.key("t1"), Session: u.session("s1"), UserID: user, Channel: "slack:C1", Trigger: echogate.TriggerMessage,
			Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "gpt-4o-mini", InputTokens: 100, OutputTokens: 20, CachedInputTokens: 64, CostUSD: 0.0000270}, At: r.at(time.Second)},
		{Turn: u.key("t1"), Session: u.session("s1"), UserID: user, Channel: "slack:C1", Trigger: echogate.TriggerMessage,
			Usage: echogate.Usage{Kind: echogate.UsageTool, Model: "", Failed: true}, At: r.at(2 * time.Second)},
		{UserID: user, Trigger: echogate.TriggerConsolidation,
			Usage: echogate.Usage{Kind: echogate.UsageConsolidation, Model: "gpt-4o", InputTokens: 5, OutputTokens: 1, CostUSD: 1.5}, At: r.at(2 * time.Second)},
		// Recorded last but dated first (a late report): lists sort by time, not id.
		{Turn: u.key("t0"), UserID: user, Trigger: echogate.TriggerScheduled,
			Usage: echogate.Usage{Kind: echogate.UsageEmbedding, Model: "text-embedding-3-small", InputTokens: 7}, At: r.at(0)},
	}
	var lastID int64
	for i := range recs {
		id, err := s.RecordUsage(ctx, recs[i])
		must(t, "RecordUsage", err)
		if id <= lastID {
			t.Errorf("RecordUsage #%d id = %d, want > %d", i, id, lastID)
		}
		lastID = id
		recs[i].ID = id
	}
	got, err := s.ListUsage(ctx, echogate.UsageFilter{UserID: user}, 0)
	must(t, "ListUsage", err)
	// Newest first; the two at the same time by id, higher first.
	want := []echogate.UsageRecord{recs[2], recs[1], recs[0], recs[3]}
	if len(got) != len(want) {
		t.Fatalf("ListUsage(user) = %d records, want %d", len(got), len(want))
	}
	for i := range want {
		checkUsageRecord(t, fmt.Sprintf("ListUsage(user)[%d]", i), got[i], want[i])
	}
	got, err = s.ListUsage(ctx, echogate.UsageFilter{UserID: user}, 1)
	must(t, "ListUsage(limit 1)", err)
	if len(got) != 1 || got[0].ID != recs[2].ID {
		t.Errorf("ListUsage(user, limit 1) = %+v, want only the newest (id %d)", got, recs[2].ID)
	}
	got, err = s.ListUsage(ctx, echogate.UsageFilter{Turn: u.key("t1"), Since: r.at(2 * time.Second)}, 0)
	must(t, "ListUsage(turn, since)", err)
	if len(got) != 1 || got[0].ID != recs[1].ID {
		t.Errorf("ListUsage(turn t1, since 2s) = %+v, want only id %d", got, recs[1].ID)
	}
}

func (r *runner) usageSumFilters(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	// The window [w, w+10s) of this run holds only these records.
	w := r.at(30 * 24 * time.Hour).Add(time.Duration(len(u.prefix)) * time.Millisecond)
	userA, userB := u.key("ua"), u.key("ub")
	type rec struct {
		turn, user, channel string
		session             echogate.SessionKey
		in, out, cached     int64
		cost                float64
		at                  time.Duration
	}
	for _, x := range []rec{
		{u.key("t1"), userA, "slack:C1", u.session("s1"), 100, 10, 50, 0.25, 0},
		{u.key("t1"), userA, "slack:C1", u.session("s1"), 200, 20, 0, 0.5, time.Second},
		{u.key("t2"), userA, "discord:G1", u.session("s2"), 400, 40, 0, 1, 2 * time.Second},
		{u.key("t3"), userB, "discord:G1", u.session("s3"), 800, 80, 100, 2, 3 * time.Second},
		{"", userB, "", "", 1600, 160, 0, 4, 4 * time.Second}, // scheduled work: no turn/session/channel
	} {
		_, err := s.RecordUsage(ctx, echogate.UsageRecord{Turn: x.turn, Session: x.session, UserID: x.user, Channel: x.channel,
			Trigger: echogate.TriggerMessage, At: w.Add(x.at),
			Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "m", InputTokens: x.in, OutputTokens: x.out, CachedInputTokens: x.cached, CostUSD: x.cost}})
		must(t, "RecordUsage", err)
	}
	sum := func(in, out, cached int64, cost float64) echogate.Usage {
		return echogate.Usage{InputTokens: in, OutputTokens: out, CachedInputTokens: cached, CostUSD: cost}
	}
	for name, tt := range map[string]struct {
		f    echogate.UsageFilter
		want echogate.Usage
	}{
		"turn":                  {echogate.UsageFilter{Turn: u.key("t1")}, sum(300, 30, 50, 0.75)},
		"session":               {echogate.UsageFilter{Session: u.session("s2")}, sum(400, 40, 0, 1)},
		"user":                  {echogate.UsageFilter{UserID: userA}, sum(700, 70, 50, 1.75)},
		"channel":               {echogate.UsageFilter{Channel: "discord:G1", Since: w, Until: w.Add(10 * time.Second)}, sum(1200, 120, 100, 3)},
		"user and channel":      {echogate.UsageFilter{UserID: userA, Channel: "slack:C1"}, sum(300, 30, 50, 0.75)},
		"window":                {echogate.UsageFilter{Since: w, Until: w.Add(10 * time.Second)}, sum(3100, 310, 150, 7.75)},
		"since inclusive":       {echogate.UsageFilter{UserID: userA, Since: w.Add(time.Second)}, sum(600, 60, 0, 1.5)},
		"until exclusive":       {echogate.UsageFilter{UserID: userA, Until: w.Add(2 * time.Second)}, sum(300, 30, 50, 0.75)},
		"since and until":       {echogate.UsageFilter{Since: w.Add(time.Second), Until: w.Add(4 * time.Second)}, sum(1400, 140, 100, 3.5)},
		"empty window":          {echogate.UsageFilter{UserID: userB, Since: w.Add(time.Second), Until: w.Add(time.Second)}, sum(0, 0, 0, 0)},
		"no match":              {echogate.UsageFilter{UserID: u.key("nobody")}, sum(0, 0, 0, 0)},
		"user b all":            {echogate.UsageFilter{UserID: userB}, sum(2400, 240, 100, 6)},
		"turn no match in time": {echogate.UsageFilter{Turn: u.key("t3"), Until: w}, sum(0, 0, 0, 0)},
	} {
		got, err := s.SumUsage(ctx, tt.f)
		if err != nil {
			t.Errorf("SumUsage(%s): %v", name, err)
			continue
		}
		if got.InputTokens != tt.want.InputTokens || got.OutputTokens != tt.want.OutputTokens ||
			got.CachedInputTokens != tt.want.CachedInputTokens || !closeUSD(got.CostUSD, tt.want.CostUSD) {
			t.Errorf("SumUsage(%s) = %+v, want %+v", name, got, tt.want)
		}
	}
}

func closeUSD(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}
