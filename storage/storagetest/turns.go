// Turn records' part of Run.

package storagetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

func (r *runner) turns(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	want := echogate.TurnRecord{
		ID: u.key("turn"), Session: u.session("s"), EventKey: "slack:Ev1", UserID: "slack:U1",
		Status: echogate.TurnRunning, StartedAt: r.at(time.Second),
	}
	must(t, "CreateTurn", s.CreateTurn(ctx, want))
	got, err := s.GetTurn(ctx, want.ID)
	must(t, "GetTurn", err)
	checkTurn(t, "GetTurn after create", got, want)

	if err := s.CreateTurn(ctx, want); err == nil {
		t.Errorf("CreateTurn(%q) twice = nil, want an error", want.ID)
	}

	upd := want
	upd.Session, upd.EventKey, upd.UserID, upd.StartedAt = "elsewhere", "other", "other", r.at(time.Hour) // ignored
	upd.Status = echogate.TurnFailed
	upd.Model = "gpt-4o-mini"
	upd.RouteReason = "default"
	upd.Error = "model: 500 Internal Server Error"
	upd.InputTokens, upd.OutputTokens, upd.CachedInputTokens, upd.CostUSD = 1200, 345, 960, 0.000387
	upd.EndedAt = r.at(3 * time.Second)
	upd.Skills = []string{"incident-runbook"}
	must(t, "UpdateTurn", s.UpdateTurn(ctx, upd))
	got, err = s.GetTurn(ctx, want.ID)
	must(t, "GetTurn", err)
	want.Status, want.Model, want.RouteReason, want.Error = upd.Status, upd.Model, upd.RouteReason, upd.Error
	want.InputTokens, want.OutputTokens, want.CachedInputTokens = upd.InputTokens, upd.OutputTokens, upd.CachedInputTokens
	want.CostUSD, want.EndedAt, want.Skills = upd.CostUSD, upd.EndedAt, upd.Skills
	checkTurn(t, "GetTurn after update", got, want)

	// A paused turn that resumes has no end again.
	upd.Status, upd.EndedAt = echogate.TurnPaused, time.Time{}
	must(t, "UpdateTurn(paused)", s.UpdateTurn(ctx, upd))
	got, err = s.GetTurn(ctx, want.ID)
	must(t, "GetTurn", err)
	want.Status, want.EndedAt = echogate.TurnPaused, time.Time{}
	checkTurn(t, "GetTurn after update to paused", got, want)
}

func (r *runner) listTurns(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	a, b := u.session("a"), u.session("b")
	var ids []string
	for i, sess := range []echogate.SessionKey{a, b, a, a, b} {
		id := u.key(fmt.Sprintf("%c-t%d", 'z'-i, i)) // ids sort against start order
		ids = append(ids, id)
		must(t, "CreateTurn", s.CreateTurn(ctx, echogate.TurnRecord{ID: id, Session: sess, Status: echogate.TurnDoneSt, StartedAt: r.at(time.Duration(i) * time.Second)}))
	}
	idsOf := func(ts []echogate.TurnRecord) []string {
		var out []string
		for _, t := range ts {
			if u.mine(t.ID) {
				out = append(out, t.ID)
			}
		}
		return out
	}
	for _, tt := range []struct {
		key   echogate.SessionKey
		limit int
		want  []string
	}{
		{a, 0, []string{ids[3], ids[2], ids[0]}},
		{a, 2, []string{ids[3], ids[2]}},
		{b, 0, []string{ids[4], ids[1]}},
		{u.session("none"), 0, nil},
	} {
		got, err := s.ListTurns(ctx, tt.key, tt.limit)
		if err != nil {
			t.Errorf("ListTurns(%q, %d): %v", tt.key, tt.limit, err)
			continue
		}
		if g := idsOf(got); !slices.Equal(g, tt.want) || len(got) != len(tt.want) {
			t.Errorf("ListTurns(%q, %d) = %q, want %q", tt.key, tt.limit, g, tt.want)
		}
	}
	all, err := s.ListTurns(ctx, "", 0)
	must(t, "ListTurns(all)", err)
	if got, want := idsOf(all), []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Errorf("ListTurns(\"\", 0) ours = %q, want %q", got, want)
	}
	for i := 1; i < len(all); i++ {
		if all[i].StartedAt.After(all[i-1].StartedAt) {
			t.Errorf("ListTurns(\"\")[%d].StartedAt = %v after [%d] %v, want newest first", i, all[i].StartedAt, i-1, all[i-1].StartedAt)
		}
	}
	limited, err := s.ListTurns(ctx, "", 3)
	must(t, "ListTurns(all, 3)", err)
	if len(limited) != 3 {
		t.Errorf("ListTurns(\"\", 3) returned %d turns, want 3", len(limited))
	}
}
