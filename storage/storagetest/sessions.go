// Sessions' part of Run: upsert, list and delete, and the approval grants a session holds.

package storagetest

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

func (r *runner) sessionUpsertGet(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	want := echogate.SessionInfo{
		Key: u.session("slack:C1:1700000000.000100"),
		Conversation: echogate.ConversationRef{
			Platform: echogate.PlatformSlack, Workspace: "T1", Channel: "C1", Thread: "1700000000.000100", DM: true,
		},
		UserID:    "slack:U1",
		Ephemeral: true,
		CreatedAt: r.at(time.Second),
		UpdatedAt: r.at(time.Second),
	}
	must(t, "UpsertSession", s.UpsertSession(ctx, want))
	got, err := s.GetSession(ctx, want.Key)
	must(t, "GetSession", err)
	checkSession(t, "GetSession after create", got, want)

	// A later upsert bumps UpdatedAt only: the starter (UserID) stays, whoever posts later
	// (the pipeline's authority over a shared conversation relies on it).
	later := want
	later.Conversation.Channel = "C-other"
	later.Ephemeral = false
	later.UserID = "slack:U2"
	later.CreatedAt = r.at(5 * time.Second)
	later.UpdatedAt = r.at(5 * time.Second)
	must(t, "UpsertSession (later)", s.UpsertSession(ctx, later))
	got, err = s.GetSession(ctx, want.Key)
	must(t, "GetSession", err)
	want.UpdatedAt = r.at(5 * time.Second)
	checkSession(t, "GetSession after a later upsert", got, want)

	// An older upsert (a late writer) does not move UpdatedAt back.
	older := want
	older.UpdatedAt = r.at(3 * time.Second)
	must(t, "UpsertSession (older)", s.UpsertSession(ctx, older))
	got, err = s.GetSession(ctx, want.Key)
	must(t, "GetSession", err)
	checkSession(t, "GetSession after an older upsert", got, want)

	// Minimal session: empty optional fields round-trip.
	minimal := echogate.SessionInfo{Key: u.session("web:min"), CreatedAt: r.at(0), UpdatedAt: r.at(0)}
	must(t, "UpsertSession(min)", s.UpsertSession(ctx, minimal))
	got, err = s.GetSession(ctx, minimal.Key)
	must(t, "GetSession(min)", err)
	checkSession(t, "GetSession(min)", got, minimal)
}

func (r *runner) listSessions(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	var keys []echogate.SessionKey
	for i := range 4 {
		k := u.session(fmt.Sprintf("s%d", i))
		keys = append(keys, k)
		at := r.at(time.Duration(10+i) * time.Second)
		must(t, "UpsertSession", s.UpsertSession(ctx, echogate.SessionInfo{Key: k, CreatedAt: r.at(0), UpdatedAt: at}))
	}
	// Bump s0 to the newest.
	must(t, "UpsertSession(bump)", s.UpsertSession(ctx, echogate.SessionInfo{Key: keys[0], CreatedAt: r.at(0), UpdatedAt: r.at(time.Minute)}))

	all, err := s.ListSessions(ctx, 0)
	must(t, "ListSessions(0)", err)
	var got []echogate.SessionKey
	for i, si := range all {
		if i > 0 && si.UpdatedAt.After(all[i-1].UpdatedAt) {
			t.Errorf("ListSessions()[%d].UpdatedAt = %v after [%d] %v, want newest first", i, si.UpdatedAt, i-1, all[i-1].UpdatedAt)
		}
		if u.mine(string(si.Key)) {
			got = append(got, si.Key)
		}
	}
	if want := []echogate.SessionKey{keys[0], keys[3], keys[2], keys[1]}; !slices.Equal(got, want) {
		t.Errorf("ListSessions(0) ours = %q, want %q", got, want)
	}
	limited, err := s.ListSessions(ctx, 3)
	must(t, "ListSessions(3)", err)
	if len(limited) != 3 {
		t.Errorf("ListSessions(3) returned %d sessions, want 3", len(limited))
	}
}

func (r *runner) deleteSession(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key, keep := u.session("doomed"), u.session("kept")
	turn := u.key("turn")
	for _, k := range []echogate.SessionKey{key, keep} {
		must(t, "UpsertSession", s.UpsertSession(ctx, echogate.SessionInfo{Key: k, UserID: "web:u", CreatedAt: r.at(0), UpdatedAt: r.at(0)}))
		must(t, "AppendMessages", s.AppendMessages(ctx, k, turn, []echogate.Message{userMsg("hi"), {Role: echogate.RoleAssistant, Content: "hello"}}, r.at(0)))
		must(t, "GrantTool", s.GrantTool(ctx, k, "web:u", "http_fetch", "web:u", r.at(0)))
		must(t, "SavePending", s.SavePending(ctx, echogate.PendingTurn{Session: k, Turn: turn, Kind: echogate.PauseAsk, CreatedAt: r.at(0)}))
	}
	must(t, "CreateTurn", s.CreateTurn(ctx, echogate.TurnRecord{ID: turn, Session: key, Status: echogate.TurnDoneSt, StartedAt: r.at(0)}))
	_, err := s.RecordUsage(ctx, echogate.UsageRecord{Turn: turn, Session: key, Trigger: echogate.TriggerMessage,
		Usage: echogate.Usage{Kind: echogate.UsageModel, InputTokens: 10, OutputTokens: 5, CostUSD: 0.25}, At: r.at(0)})
	must(t, "RecordUsage", err)

	must(t, "DeleteSession", s.DeleteSession(ctx, key))

	_, err = s.GetSession(ctx, key)
	checkNotFound(t, "GetSession(deleted)", err)
	if h, err := s.History(ctx, key, 0); err != nil || len(h) != 0 {
		t.Errorf("History(deleted) = %d entries, %v; want 0, nil", len(h), err)
	}
	if g, err := s.Grants(ctx, key, "web:u"); err != nil || len(g) != 0 {
		t.Errorf("Grants(deleted) = %v, %v; want none, nil", g, err)
	}
	_, err = s.GetPending(ctx, key)
	checkNotFound(t, "GetPending(deleted)", err)
	if sum, err := s.SumUsage(ctx, echogate.UsageFilter{Session: key}); err != nil || sum.InputTokens != 10 || sum.CostUSD != 0.25 {
		t.Errorf("SumUsage(deleted session) = %+v, %v; want the ledger kept (10 input tokens, $0.25)", sum, err)
	}
	if _, err := s.GetTurn(ctx, turn); err != nil {
		t.Errorf("GetTurn(turn of deleted session) = %v, want the turn kept", err)
	}
	checkNotFound(t, "DeleteSession(deleted)", s.DeleteSession(ctx, key))

	// The other session is untouched.
	if _, err := s.GetSession(ctx, keep); err != nil {
		t.Errorf("GetSession(other) = %v, want it kept", err)
	}
	if h, err := s.History(ctx, keep, 0); err != nil || len(h) != 2 {
		t.Errorf("History(other) = %d entries, %v; want 2, nil", len(h), err)
	}
	if g, err := s.Grants(ctx, keep, "web:u"); err != nil || len(g) != 1 {
		t.Errorf("Grants(other) = %v, %v; want http_fetch, nil", g, err)
	}
	if _, err := s.GetPending(ctx, keep); err != nil {
		t.Errorf("GetPending(other) = %v, want it kept", err)
	}
	// A deleted session starts afresh.
	must(t, "AppendMessages(after delete)", s.AppendMessages(ctx, key, "t2", []echogate.Message{userMsg("again")}, r.at(time.Second)))
	if h, err := s.History(ctx, key, 0); err != nil || len(h) != 1 || h[0].Message.Content != "again" {
		t.Errorf("History(recreated) = %q, %v; want [again]", contents(h), err)
	}
}

func (r *runner) grants(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key, other := u.session("g"), u.session("other")
	for i, g := range []struct{ tool, by string }{
		{"run_command", "slack:ADMIN"}, {"http_fetch", "slack:U1"}, {"run_command", "slack:U1"}, {"mcp__docs", "slack:U1"},
	} {
		must(t, "GrantTool("+g.tool+")", s.GrantTool(ctx, key, "slack:U1", g.tool, g.by, r.at(time.Duration(i)*time.Second)))
	}
	got, err := s.Grants(ctx, key, "slack:U1")
	must(t, "Grants", err)
	want := map[string]string{"http_fetch": "slack:U1", "mcp__docs": "slack:U1", "run_command": "slack:ADMIN"}
	if !maps.Equal(got, want) {
		t.Errorf("Grants(%q, slack:U1) = %v, want %v (each once, the first grant kept)", key, got, want)
	}
	if got, err := s.Grants(ctx, other, "slack:U1"); err != nil || len(got) != 0 {
		t.Errorf("Grants(%q, slack:U1) = %v, %v; want none", other, got, err)
	}
	if err := s.GrantTool(ctx, key, "", "run_command", "slack:U1", r.at(0)); err == nil {
		t.Errorf("GrantTool(no user) = nil, want an error: a grant is someone's")
	}
}

// grantsPerUser: a grant is one person's (issue 36): U1's 🔁 of run_command in a shared
// session is not U2's, and an approver's grant for U2 is U2's, not the approver's.
func (r *runner) grantsPerUser(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("shared")
	must(t, "GrantTool(U1's own)", s.GrantTool(ctx, key, "slack:U1", "run_command", "slack:U1", r.at(0)))
	must(t, "GrantTool(for U2, by an approver)", s.GrantTool(ctx, key, "slack:U2", "http_fetch", "slack:ADMIN", r.at(time.Second)))
	for user, want := range map[string]map[string]string{
		"slack:U1": {"run_command": "slack:U1"}, "slack:U2": {"http_fetch": "slack:ADMIN"}, "slack:ADMIN": {}, "slack:U3": {},
	} {
		got, err := s.Grants(ctx, key, user)
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("Grants(%q, %s) = %v, %v; want %v", key, user, got, err, want)
		}
	}
}
