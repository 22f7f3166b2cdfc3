package storagetest

import (
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// agents: a turn keeps the agent it was created with (UpdateTurn does not change it), and
// ledger entries are stored with their agent and summed by it.
func (r *runner) agents(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("s")
	want := echogate.TurnRecord{ID: u.key("turn"), Session: key, UserID: "slack:U1", Agent: "oncall",
		Status: echogate.TurnRunning, StartedAt: r.at(time.Second)}
	must(t, "CreateTurn", s.CreateTurn(ctx, want))
	upd := want
	upd.Agent, upd.Status, upd.EndedAt = "other", echogate.TurnDoneSt, r.at(2*time.Second)
	must(t, "UpdateTurn", s.UpdateTurn(ctx, upd))
	got, err := s.GetTurn(ctx, want.ID)
	must(t, "GetTurn", err)
	want.Status, want.EndedAt = upd.Status, upd.EndedAt
	checkTurn(t, "GetTurn of an agent's turn after an update naming another agent", got, want)
	list, err := s.ListTurns(ctx, key, 0)
	must(t, "ListTurns", err)
	if len(list) != 1 || list[0].Agent != "oncall" {
		t.Errorf("ListTurns = %+v, want the one turn with agent oncall", list)
	}

	w := r.at(40 * 24 * time.Hour).Add(time.Duration(len(u.prefix)) * time.Millisecond)
	user := u.key("u")
	oncall, docs := u.key("oncall"), u.key("docs")
	var recs []echogate.UsageRecord
	for i, a := range []string{oncall, oncall, docs, ""} {
		rec := echogate.UsageRecord{Turn: u.key("t"), Session: key, UserID: user, Channel: "slack:C1", Agent: a,
			Trigger: echogate.TriggerMessage, At: w.Add(time.Duration(i) * time.Second),
			Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "m", InputTokens: 10, OutputTokens: 1, CostUSD: float64(i + 1)}}
		id, err := s.RecordUsage(ctx, rec)
		must(t, "RecordUsage", err)
		rec.ID = id
		recs = append(recs, rec)
	}
	for name, tt := range map[string]struct {
		f    echogate.UsageFilter
		want float64
	}{
		"agent":          {echogate.UsageFilter{Agent: oncall}, 3},
		"other agent":    {echogate.UsageFilter{Agent: docs}, 3},
		"agent and user": {echogate.UsageFilter{Agent: oncall, UserID: user, Since: w.Add(time.Second)}, 2},
		"no such agent":  {echogate.UsageFilter{Agent: u.key("nobody")}, 0},
		"every agent":    {echogate.UsageFilter{UserID: user}, 10},
	} {
		sum, err := s.SumUsage(ctx, tt.f)
		must(t, "SumUsage("+name+")", err)
		if !closeUSD(sum.CostUSD, tt.want) {
			t.Errorf("SumUsage(%s).CostUSD = %v, want %v", name, sum.CostUSD, tt.want)
		}
	}
	listed, err := s.ListUsage(ctx, echogate.UsageFilter{Agent: docs}, 0)
	must(t, "ListUsage(agent)", err)
	if len(listed) != 1 {
		t.Fatalf("ListUsage(agent docs) = %+v, want one entry", listed)
	}
	checkUsageRecord(t, "ListUsage(agent docs)", listed[0], recs[2])
}
