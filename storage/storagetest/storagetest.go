package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// Run runs the conformance suite against the stores open returns. open is called once per
// subtest and must return a store that is open and migrated; it may return a fresh database
// each time or the same shared one (PostgreSQL): every subtest uses keys unique to this run and
// checks listings only for its own records, so subtests are independent. open registers any
// cleanup with t.Cleanup.
//
// Besides pipeline.Store's documented contract, Run pins:
//   - times come back in UTC, equal to what was stored up to at least millisecond precision
//     (exactly, for times with millisecond precision); zero EndedAt/ExpiresAt round-trip as zero;
//   - limit <= 0 lists everything;
//   - Get*, Update*, Delete* and CompleteEvent of an unknown record wrap echogate.ErrNotFound;
//     History, Grants, List* and SumUsage of nothing are empty, not errors;
//   - CreateTurn of an existing id fails; UpdateTurn keeps session, event key, user and start;
//     a store with StartTurn (SQLite's queued insert) reports to done once what CreateTurn would;
//   - BeginTurn writes the record and the input once, whatever its order (beginturn.go);
//   - UpsertSession keeps the first conversation, user, ephemeral flag and CreatedAt and never
//     moves UpdatedAt back;
//   - DeleteSession keeps turns and the usage ledger;
//   - Grants are sorted by tool name; ListUsage is newest first; ListPending oldest first;
//   - empty keys and ids are rejected;
//   - every method fails with an error wrapping ctx.Err() once ctx is cancelled.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	r := &runner{run: randomHex(t, 6), open: open, base: randomBase(t)}
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store, u uniq)
	}{
		{"ClaimEventOnce", r.claimEventOnce},
		{"ClaimEventConcurrent", r.claimEventConcurrent},
		{"CompleteEvent", r.completeEvent},
		{"UnfinishedEvents", r.unfinishedEvents},
		{"SessionUpsertGet", r.sessionUpsertGet},
		{"ListSessions", r.listSessions},
		{"DeleteSession", r.deleteSession},
		{"AppendAndHistory", r.appendAndHistory},
		{"HistoryLimit", r.historyLimit},
		{"HistorySince", r.historySince},
		{"FinishTurn", r.finishTurn},
		{"RecordProgress", r.recordProgress},
		{"ResumeTurn", r.resumeTurn},
		{"ResumeTurnRace", r.resumeTurnRace},
		{"ResumeTurnOfRunningRecord", r.resumeTurnOfRunningRecord},
		{"ReopenEvent", r.reopenEvent},
		{"RecordToolRun", r.recordToolRun},
		{"RecordPosting", r.recordPosting},
		{"ResumeFollowsSession", r.resumeFollowsSession},
		{"MessageRoundTrip", r.messageRoundTrip},
		{"ConcurrentAppendDifferentSessions", r.concurrentAppendDifferentSessions},
		{"ConcurrentAppendSameSession", r.concurrentAppendSameSession},
		{"Grants", r.grants},
		{"GrantsPerUser", r.grantsPerUser},
		{"Turns", r.turns},
		{"StartTurn", r.startTurn},
		{"BeginTurn", r.beginTurn},
		{"ListTurns", r.listTurns},
		{"UsageRecordList", r.usageRecordList},
		{"UsageSumFilters", r.usageSumFilters},
		{"Agents", r.agents},
		{"Pending", r.pending},
		{"ListPending", r.listPending},
		{"NotFound", r.notFound},
		{"RejectsEmptyKeys", r.rejectsEmptyKeys},
		{"TimePrecision", r.timePrecision},
		{"CancelledContext", r.cancelledContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := r.open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			tt.fn(t, s, uniq{prefix: "st-" + r.run + "-" + tt.name + "-"})
		})
	}
}

type runner struct {
	run  string
	open func(t *testing.T) Store
	// base is a millisecond-precise UTC time unique to the run, so time windows of one run do
	// not contain records left by another in a shared database.
	base time.Time
}

// at returns the run's base time plus d.
func (r *runner) at(d time.Duration) time.Time { return r.base.Add(d) }

// uniq makes keys unique to a run and subtest.
type uniq struct{ prefix string }

func (u uniq) key(name string) string                  { return u.prefix + name }
func (u uniq) session(name string) echogate.SessionKey { return echogate.SessionKey(u.prefix + name) }
func (u uniq) mine(s string) bool                      { return strings.HasPrefix(s, u.prefix) }

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("crypto/rand: %v", err)
	}
	return hex.EncodeToString(b)
}

// randomBase picks a millisecond-precise time between 1985 and 2005, away from real traffic.
func randomBase(t *testing.T) time.Time {
	t.Helper()
	start := time.Date(1985, 1, 1, 0, 0, 0, 0, time.UTC)
	n, err := rand.Int(rand.Reader, big.NewInt(int64(20*365*24*time.Hour/time.Millisecond)))
	if err != nil {
		t.Fatalf("crypto/rand: %v", err)
	}
	return start.Add(time.Duration(n.Int64()) * time.Millisecond)
}

// ---- comparison helpers ----

func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if want.IsZero() {
		if !got.IsZero() {
			t.Errorf("%s = %v, want the zero time", what, got)
		}
		return
	}
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, got.Location())
	}
}

func checkSession(t *testing.T, what string, got, want echogate.SessionInfo) {
	t.Helper()
	checkTime(t, what+".CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, what+".UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkTurn(t *testing.T, what string, got, want echogate.TurnRecord) {
	t.Helper()
	checkTime(t, what+".StartedAt", got.StartedAt, want.StartedAt)
	checkTime(t, what+".EndedAt", got.EndedAt, want.EndedAt)
	got.StartedAt, got.EndedAt, want.StartedAt, want.EndedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkPending(t *testing.T, what string, got, want echogate.PendingTurn) {
	t.Helper()
	checkTime(t, what+".CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, what+".ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	if !bytes.Equal(got.State, want.State) {
		t.Errorf("%s.State = %q, want %q", what, got.State, want.State)
	}
	got.CreatedAt, got.ExpiresAt, want.CreatedAt, want.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	got.State, want.State = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkUsageRecord(t *testing.T, what string, got, want echogate.UsageRecord) {
	t.Helper()
	checkTime(t, what+".At", got.At, want.At)
	got.At, want.At = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func checkNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("%s error = %v, want one wrapping echogate.ErrNotFound", what, err)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func userMsg(text string) echogate.Message {
	return echogate.Message{Role: echogate.RoleUser, Content: text}
}

func contents(h []echogate.StoredMessage) []string {
	out := make([]string, len(h))
	for i, m := range h {
		out[i] = m.Message.Content
	}
	return out
}

// ---- events ----

func (r *runner) claimEventOnce(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.key("ev")
	for i, want := range []bool{true, false, false} {
		payload := fmt.Appendf(nil, `{"n":%d}`, i)
		got, err := s.ClaimEvent(ctx, key, payload, r.at(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatalf("ClaimEvent(%q) #%d: %v", key, i+1, err)
		}
		if got != want {
			t.Errorf("ClaimEvent(%q) #%d = %v, want %v", key, i+1, got, want)
		}
	}
	// A duplicate keeps the first payload and claim time.
	evs, err := s.UnfinishedEvents(ctx, r.at(time.Hour), 0)
	must(t, "UnfinishedEvents", err)
	var mine []echogate.ClaimedEvent
	for _, ev := range evs {
		if u.mine(ev.Key) {
			mine = append(mine, ev)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("UnfinishedEvents after claiming %q 3 times = %d of ours, want 1", key, len(mine))
	}
	if got, want := string(mine[0].Payload), `{"n":0}`; got != want {
		t.Errorf("UnfinishedEvents()[%q].Payload = %s, want %s (the first claim's)", key, got, want)
	}
	checkTime(t, "UnfinishedEvents()[0].ClaimedAt", mine[0].ClaimedAt, r.at(0))

	other := u.key("other")
	if got, err := s.ClaimEvent(ctx, other, nil, r.at(0)); err != nil || !got {
		t.Errorf("ClaimEvent(%q) = %v, %v; want true, nil", other, got, err)
	}
}

func (r *runner) claimEventConcurrent(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	const n = 20
	for round := range 3 {
		key := u.key(fmt.Sprintf("race-%d", round))
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			wins  = make(chan bool, n)
			errs  = make(chan error, n)
		)
		for range n {
			wg.Go(func() {
				<-start
				ok, err := s.ClaimEvent(ctx, key, []byte(`{}`), r.at(0))
				if err != nil {
					errs <- err
					return
				}
				wins <- ok
			})
		}
		close(start)
		wg.Wait()
		close(wins)
		close(errs)
		for err := range errs {
			t.Errorf("concurrent ClaimEvent(%q): %v", key, err)
		}
		won := 0
		for ok := range wins {
			if ok {
				won++
			}
		}
		if won != 1 {
			t.Errorf("%d concurrent ClaimEvent(%q): %d returned true, want exactly 1", n, key, won)
		}
	}
}

func (r *runner) completeEvent(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	a, b := u.key("a"), u.key("b")
	for _, k := range []string{a, b} {
		if _, err := s.ClaimEvent(ctx, k, []byte(`{}`), r.at(time.Second)); err != nil {
			t.Fatalf("ClaimEvent(%q): %v", k, err)
		}
	}
	must(t, "CompleteEvent(a)", s.CompleteEvent(ctx, a, r.at(2*time.Second)))
	if err := s.CompleteEvent(ctx, a, r.at(3*time.Second)); err != nil {
		t.Errorf("CompleteEvent(%q) twice = %v, want nil", a, err)
	}
	evs, err := s.UnfinishedEvents(ctx, r.at(time.Hour), 0)
	must(t, "UnfinishedEvents", err)
	var mine []string
	for _, ev := range evs {
		if u.mine(ev.Key) {
			mine = append(mine, ev.Key)
		}
	}
	if want := []string{b}; !slices.Equal(mine, want) {
		t.Errorf("UnfinishedEvents after completing %q = %q, want %q", a, mine, want)
	}
	// A completed event is still a duplicate.
	if got, err := s.ClaimEvent(ctx, a, nil, r.at(4*time.Second)); err != nil || got {
		t.Errorf("ClaimEvent(%q) after completion = %v, %v; want false, nil", a, got, err)
	}
	checkNotFound(t, "CompleteEvent(never claimed)", s.CompleteEvent(ctx, u.key("never"), r.at(0)))
}

func (r *runner) unfinishedEvents(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	// Claimed in an order that differs from their times, with keys that sort in yet another
	// order, so the store must sort by claim time.
	keys := map[int]string{}
	for _, i := range []int{3, 1, 4, 2, 5} {
		keys[i] = u.key(fmt.Sprintf("%c-e%d", 'z'-i, i))
		ok, err := s.ClaimEvent(ctx, keys[i], fmt.Appendf(nil, `{"i":%d}`, i), r.at(time.Duration(i)*time.Second))
		if err != nil || !ok {
			t.Fatalf("ClaimEvent(%q) = %v, %v; want true, nil", keys[i], ok, err)
		}
	}
	must(t, "CompleteEvent", s.CompleteEvent(ctx, keys[2], r.at(10*time.Second)))

	before := r.at(5 * time.Second) // e5 was claimed at exactly `before`: excluded
	all, err := s.UnfinishedEvents(ctx, before, 0)
	must(t, "UnfinishedEvents", err)
	var mine []echogate.ClaimedEvent
	for i, ev := range all {
		if !ev.ClaimedAt.Before(before) {
			t.Errorf("UnfinishedEvents(before %v)[%d].ClaimedAt = %v, not before", before, i, ev.ClaimedAt)
		}
		if i > 0 && ev.ClaimedAt.Before(all[i-1].ClaimedAt) {
			t.Errorf("UnfinishedEvents()[%d].ClaimedAt = %v before [%d] %v, want oldest first", i, ev.ClaimedAt, i-1, all[i-1].ClaimedAt)
		}
		if u.mine(ev.Key) {
			mine = append(mine, ev)
		}
	}
	var got []string
	for _, ev := range mine {
		got = append(got, ev.Key)
	}
	if want := []string{keys[1], keys[3], keys[4]}; !slices.Equal(got, want) {
		t.Fatalf("UnfinishedEvents(before e5) ours = %q, want %q", got, want)
	}
	for _, ev := range mine {
		var (
			c rune
			i int
		)
		fmt.Sscanf(ev.Key[len(u.prefix):], "%c-e%d", &c, &i)
		if want := fmt.Sprintf(`{"i":%d}`, i); string(ev.Payload) != want {
			t.Errorf("UnfinishedEvents()[%q].Payload = %s, want %s", ev.Key, ev.Payload, want)
		}
		checkTime(t, "UnfinishedEvents()["+ev.Key+"].ClaimedAt", ev.ClaimedAt, r.at(time.Duration(i)*time.Second))
	}

	limited, err := s.UnfinishedEvents(ctx, before, 2)
	must(t, "UnfinishedEvents(limit 2)", err)
	if len(limited) != 2 {
		t.Fatalf("UnfinishedEvents(limit 2) returned %d events, want 2", len(limited))
	}
	if limited[0].ClaimedAt.After(limited[1].ClaimedAt) {
		t.Errorf("UnfinishedEvents(limit 2) = %v, %v; want oldest first", limited[0].ClaimedAt, limited[1].ClaimedAt)
	}
	if !limited[0].ClaimedAt.Equal(all[0].ClaimedAt) {
		t.Errorf("UnfinishedEvents(limit 2)[0].ClaimedAt = %v, want the oldest %v", limited[0].ClaimedAt, all[0].ClaimedAt)
	}

	// Nothing is unfinished before the first claim of the run... except other runs' leftovers,
	// which are all older than r.base or in other windows: check only ours.
	early, err := s.UnfinishedEvents(ctx, r.at(time.Second), 0)
	must(t, "UnfinishedEvents(before e1)", err)
	for _, ev := range early {
		if u.mine(ev.Key) {
			t.Errorf("UnfinishedEvents(before e1) includes %q claimed at %v", ev.Key, ev.ClaimedAt)
		}
	}
}

// ---- sessions ----

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

// ---- transcript ----

func (r *runner) appendAndHistory(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("chat")
	must(t, "AppendMessages #1", s.AppendMessages(ctx, key, "t1", []echogate.Message{userMsg("a"), userMsg("b"), userMsg("c")}, r.at(time.Second)))
	must(t, "AppendMessages (empty)", s.AppendMessages(ctx, key, "t1", nil, r.at(time.Second)))
	must(t, "AppendMessages #2", s.AppendMessages(ctx, key, "t2", []echogate.Message{userMsg("d"), userMsg("e")}, r.at(2*time.Second)))

	h, err := s.History(ctx, key, 0)
	must(t, "History", err)
	if got, want := contents(h), []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("History(0) = %q, want %q", got, want)
	}
	for i, m := range h {
		if m.Session != key {
			t.Errorf("History()[%d].Session = %q, want %q", i, m.Session, key)
		}
		if i > 0 && m.Seq <= h[i-1].Seq {
			t.Errorf("History()[%d].Seq = %d after %d, want increasing", i, m.Seq, h[i-1].Seq)
		}
		wantTurn, wantAt := "t1", r.at(time.Second)
		if i >= 3 {
			wantTurn, wantAt = "t2", r.at(2*time.Second)
		}
		if m.Turn != wantTurn {
			t.Errorf("History()[%d].Turn = %q, want %q", i, m.Turn, wantTurn)
		}
		checkTime(t, fmt.Sprintf("History()[%d].At", i), m.At, wantAt)
	}
	if h, err := s.History(ctx, u.session("nobody"), 10); err != nil || len(h) != 0 {
		t.Errorf("History(unknown session) = %d entries, %v; want 0, nil", len(h), err)
	}
}

func (r *runner) historyLimit(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("long")
	var msgs []echogate.Message
	for i := range 10 {
		msgs = append(msgs, userMsg(fmt.Sprint(i)))
	}
	must(t, "AppendMessages", s.AppendMessages(ctx, key, "t", msgs, r.at(0)))
	for _, tt := range []struct {
		limit int
		want  []string
	}{
		{3, []string{"7", "8", "9"}},
		{1, []string{"9"}},
		{10, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		{50, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		{0, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		{-1, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
	} {
		h, err := s.History(ctx, key, tt.limit)
		if err != nil {
			t.Errorf("History(limit %d): %v", tt.limit, err)
			continue
		}
		if got := contents(h); !slices.Equal(got, tt.want) {
			t.Errorf("History(limit %d) = %q, want %q", tt.limit, got, tt.want)
		}
	}
}

func (r *runner) historySince(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("since")
	must(t, "UpsertSession", s.UpsertSession(ctx, echogate.SessionInfo{Key: key, UserID: "web:u", CreatedAt: r.at(0), UpdatedAt: r.at(0)}))
	must(t, "AppendMessages #1", s.AppendMessages(ctx, key, "t1", []echogate.Message{userMsg("a"), userMsg("b")}, r.at(time.Second)))
	h, err := s.History(ctx, key, 0)
	must(t, "History", err)
	last := h[len(h)-1]

	got, ok, err := s.HistorySince(ctx, key, last, 10)
	if err != nil || !ok || len(got) != 0 {
		t.Fatalf("HistorySince(last entry) = %q, %v, %v; want nothing new, true, nil", contents(got), ok, err)
	}
	must(t, "AppendMessages #2", s.AppendMessages(ctx, key, "t2", []echogate.Message{userMsg("c"), {Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "call_1", Name: "current_time", Arguments: `{}`}}}}, r.at(2*time.Second)))
	got, ok, err = s.HistorySince(ctx, key, last, 10)
	if err != nil || !ok {
		t.Fatalf("HistorySince after an append = %v, %v; want true, nil", ok, err)
	}
	all, err := s.History(ctx, key, 0)
	must(t, "History", err)
	if len(got) != 2 || !reflect.DeepEqual(got, all[2:]) {
		t.Errorf("HistorySince after an append = %+v, want the appended entries as History returns them: %+v", got, all[2:])
	}
	if got, ok, err := s.HistorySince(ctx, key, h[0], 0); err != nil || !ok || !slices.Equal(contents(got), []string{"b", "c", ""}) {
		t.Errorf("HistorySince(first entry, no limit) = %q, %v, %v; want [b c \"\"], true, nil", contents(got), ok, err)
	}
	// More than limit entries follow: reload.
	if got, ok, err := s.HistorySince(ctx, key, h[0], 2); err != nil || ok || len(got) != 0 {
		t.Errorf("HistorySince(3 newer, limit 2) = %q, %v, %v; want nothing, false, nil", contents(got), ok, err)
	}
	if got, ok, err := s.HistorySince(ctx, key, h[0], 3); err != nil || !ok || len(got) != 3 {
		t.Errorf("HistorySince(3 newer, limit 3) = %q, %v, %v; want 3 entries, true, nil", contents(got), ok, err)
	}
	// The anchor must match by turn and time, not only by number.
	for name, anchor := range map[string]echogate.StoredMessage{
		"another turn":    {Session: key, Seq: last.Seq, Turn: "t9", At: last.At},
		"another time":    {Session: key, Seq: last.Seq, Turn: last.Turn, At: last.At.Add(time.Millisecond)},
		"a missing seq":   {Session: key, Seq: 99, Turn: last.Turn, At: last.At},
		"unknown session": {Session: u.session("nobody"), Seq: 1, Turn: "t1", At: last.At},
	} {
		k := key
		if name == "unknown session" {
			k = anchor.Session
		}
		if got, ok, err := s.HistorySince(ctx, k, anchor, 10); err != nil || ok || len(got) != 0 {
			t.Errorf("HistorySince(%s) = %q, %v, %v; want nothing, false, nil", name, contents(got), ok, err)
		}
	}
	// Deleted and started again with as many messages: the entry at that seq is another one.
	must(t, "DeleteSession", s.DeleteSession(ctx, key))
	if _, ok, err := s.HistorySince(ctx, key, last, 10); err != nil || ok {
		t.Errorf("HistorySince after DeleteSession = %v, %v; want false, nil", ok, err)
	}
	must(t, "AppendMessages again", s.AppendMessages(ctx, key, "t3", []echogate.Message{userMsg("x"), userMsg("y"), userMsg("z")}, r.at(3*time.Second)))
	if got, ok, err := s.HistorySince(ctx, key, last, 10); err != nil || ok || len(got) != 0 {
		t.Errorf("HistorySince after the session started again = %q, %v, %v; want nothing, false, nil", contents(got), ok, err)
	}
}

// finishTurn checks FinishTurn: every part written, each on its own.
func (r *runner) finishTurn(t *testing.T, s Store, u uniq) {
	f := s
	ctx := t.Context()
	key := u.session("finish")
	ev, ev2 := u.key("ev"), u.key("ev2")
	for _, k := range []string{ev, ev2} {
		if _, err := s.ClaimEvent(ctx, k, nil, r.at(0)); err != nil {
			t.Fatal(err)
		}
	}
	// Question and answer together, the finished record, the event done.
	turn := echogate.TurnRecord{ID: u.key("turn"), Session: key, EventKey: ev, UserID: "web:u", Status: echogate.TurnRunning, StartedAt: r.at(0)}
	must(t, "CreateTurn", s.CreateTurn(ctx, turn))
	// Two model calls: the record carries their sums, cached input tokens among them.
	turn.Status, turn.Model, turn.EndedAt = echogate.TurnDoneSt, "m", r.at(time.Second)
	turn.InputTokens, turn.OutputTokens, turn.CachedInputTokens, turn.CostUSD = 3+1500, 4+6, 0+1280, 0.5
	turn.Skills = []string{"incident-runbook", "sql-style"} // loaded by the skill tool, in order
	usage := []echogate.UsageRecord{{Turn: turn.ID, Session: key, UserID: "web:u", Channel: "web:c", Trigger: echogate.TriggerMessage,
		Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "m", InputTokens: 3, OutputTokens: 4, CostUSD: 0.5}, At: r.at(time.Second)},
		{Turn: turn.ID, Session: key, UserID: "web:u", Channel: "web:c", Trigger: echogate.TriggerMessage,
			Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "m", InputTokens: 1500, OutputTokens: 6, CachedInputTokens: 1280}, At: r.at(time.Second)}}
	must(t, "FinishTurn", f.FinishTurn(ctx, echogate.TurnEnd{Session: key, Turn: turn, EventKey: ev, Usage: usage,
		Messages: []echogate.Message{userMsg("q"), {Role: echogate.RoleAssistant, Content: "a"}}, At: r.at(time.Second)}))
	if led, err := s.ListUsage(ctx, echogate.UsageFilter{Turn: turn.ID}, 0); err != nil || len(led) != 2 || usage[0].ID == 0 ||
		!slices.ContainsFunc(led, func(l echogate.UsageRecord) bool { return l.ID == usage[0].ID && l.Usage.CostUSD == 0.5 }) {
		t.Errorf("ledger after FinishTurn = %+v, %v; want the two entries, with the IDs FinishTurn set (%d)", led, err, usage[0].ID)
	}
	h, err := s.History(ctx, key, 0)
	must(t, "History", err)
	if got := contents(h); !slices.Equal(got, []string{"q", "a"}) || h[0].Turn != turn.ID {
		t.Errorf("History after FinishTurn = %q (turn %q), want [q a] of turn %q", got, h[0].Turn, turn.ID)
	}
	got, err := s.GetTurn(ctx, turn.ID)
	must(t, "GetTurn", err)
	if got.Status != echogate.TurnDoneSt || got.CostUSD != 0.5 || got.EventKey != ev || got.EndedAt.IsZero() {
		t.Errorf("GetTurn after FinishTurn = %+v, want the finished record", got)
	}
	if got.InputTokens != 1503 || got.OutputTokens != 10 || got.CachedInputTokens != 1280 {
		t.Errorf("GetTurn after FinishTurn: tokens in/out/cached = %d/%d/%d, want 1503/10/1280", got.InputTokens, got.OutputTokens, got.CachedInputTokens)
	}
	if !slices.Equal(got.Skills, turn.Skills) {
		t.Errorf("GetTurn after FinishTurn: skills = %q, want %q", got.Skills, turn.Skills)
	}
	if sum, err := s.SumUsage(ctx, echogate.UsageFilter{Turn: turn.ID}); err != nil || sum.InputTokens != got.InputTokens || sum.CachedInputTokens != got.CachedInputTokens {
		t.Errorf("SumUsage of the turn = %+v, %v; want the record's %d input, %d cached", sum, err, got.InputTokens, got.CachedInputTokens)
	}
	unfinished := func() []string {
		evs, err := s.UnfinishedEvents(ctx, r.at(time.Hour), 0)
		must(t, "UnfinishedEvents", err)
		var keys []string
		for _, e := range evs {
			keys = append(keys, e.Key)
		}
		return keys
	}
	if slices.Contains(unfinished(), ev) {
		t.Errorf("event %q still unfinished after FinishTurn", ev)
	}
	// Updating a turn that does not exist fails that part alone: the messages are saved and
	// the event is completed all the same.
	missing := echogate.TurnRecord{ID: u.key("missing"), Session: key, Status: echogate.TurnDoneSt, EndedAt: r.at(2 * time.Second)}
	err = f.FinishTurn(ctx, echogate.TurnEnd{Session: key, Turn: missing, EventKey: ev2,
		Messages: []echogate.Message{userMsg("later")}, At: r.at(2 * time.Second)})
	if !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("FinishTurn updating an unknown turn = %v, want an error wrapping ErrNotFound", err)
	}
	if h, _ := s.History(ctx, key, 0); len(h) != 3 {
		t.Errorf("History after a FinishTurn whose turn part failed = %q, want the message saved", contents(h))
	}
	if slices.Contains(unfinished(), ev2) {
		t.Errorf("event %q unfinished after a FinishTurn whose turn part failed; want it completed", ev2)
	}
}

func (r *runner) messageRoundTrip(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("tools")
	want := []echogate.Message{
		{Role: echogate.RoleSystem, Content: "You are helpful."},
		{Role: echogate.RoleUser, Content: "weather in Zürich? 🌦 \"quoted\" \\ back\nslash \x00 nul", Images: []echogate.ImagePart{
			{URL: "https://example.com/a.png"}, {URL: "data:image/png;base64,iVBORw0KGgo=", MIME: "image/png"},
		}},
		{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{
			{ID: "call_1", Name: "http_fetch", Arguments: `{"url":"https://wttr.in/Zürich","n":1.50}`},
			{ID: "call_2", Name: "current_time", Arguments: `{}`},
		}},
		{Role: echogate.RoleTool, ToolCallID: "call_1", Name: "http_fetch", Content: "timeout", IsError: true},
		{Role: echogate.RoleTool, ToolCallID: "call_2", Name: "current_time", Content: "2024-01-01T00:00:00Z"},
		{Role: echogate.RoleAssistant, Content: strings.Repeat("long answer ", 2000)},
		{Role: echogate.RoleAssistant},
	}
	must(t, "AppendMessages", s.AppendMessages(ctx, key, "t", want, r.at(0)))
	h, err := s.History(ctx, key, 0)
	must(t, "History", err)
	if len(h) != len(want) {
		t.Fatalf("History = %d entries, want %d", len(h), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(h[i].Message, want[i]) {
			t.Errorf("History()[%d].Message = %+v, want %+v", i, h[i].Message, want[i])
		}
	}
}

func (r *runner) concurrentAppendDifferentSessions(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	const sessions, batches, per = 8, 15, 3
	var wg sync.WaitGroup
	errs := make(chan error, sessions*batches)
	for sess := range sessions {
		key := u.session(fmt.Sprintf("c%d", sess))
		wg.Go(func() {
			for b := range batches {
				var msgs []echogate.Message
				for m := range per {
					msgs = append(msgs, userMsg(fmt.Sprintf("%d.%d", b, m)))
				}
				if err := s.AppendMessages(ctx, key, fmt.Sprint(b), msgs, r.at(time.Duration(b)*time.Millisecond)); err != nil {
					errs <- fmt.Errorf("AppendMessages(%q, batch %d): %w", key, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var want []string
	for b := range batches {
		for m := range per {
			want = append(want, fmt.Sprintf("%d.%d", b, m))
		}
	}
	for sess := range sessions {
		key := u.session(fmt.Sprintf("c%d", sess))
		h, err := s.History(ctx, key, 0)
		must(t, "History", err)
		if got := contents(h); !slices.Equal(got, want) {
			t.Errorf("History(%q) = %q, want %q", key, got, want)
		}
		for i := 1; i < len(h); i++ {
			if h[i].Seq <= h[i-1].Seq {
				t.Errorf("History(%q)[%d].Seq = %d after %d, want increasing", key, i, h[i].Seq, h[i-1].Seq)
			}
		}
	}
}

func (r *runner) concurrentAppendSameSession(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	const writers, batches, per = 6, 8, 3
	key := u.session("shared")
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				var msgs []echogate.Message
				for m := range per {
					msgs = append(msgs, userMsg(fmt.Sprintf("w%d.b%d.m%d", w, b, m)))
				}
				if err := s.AppendMessages(ctx, key, fmt.Sprintf("w%d.b%d", w, b), msgs, r.at(0)); err != nil {
					errs <- fmt.Errorf("AppendMessages(%q, writer %d batch %d): %w", key, w, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	h, err := s.History(ctx, key, 0)
	must(t, "History", err)
	if len(h) != writers*batches*per {
		t.Fatalf("History(%q) = %d entries, want %d", key, len(h), writers*batches*per)
	}
	lastBatch := map[int]int{} // writer -> last batch seen
	for i := 0; i < len(h); i += per {
		// Each batch is contiguous and in order: no other append interleaves.
		for m := range per {
			e := h[i+m]
			if i+m > 0 && e.Seq <= h[i+m-1].Seq {
				t.Fatalf("History(%q)[%d].Seq = %d after %d, want increasing", key, i+m, e.Seq, h[i+m-1].Seq)
			}
			if want := fmt.Sprintf("%s.m%d", e.Turn, m); e.Message.Content != want {
				t.Fatalf("History(%q)[%d] = %q, want %q (batches must not interleave)", key, i+m, e.Message.Content, want)
			}
		}
		var w, b int
		fmt.Sscanf(h[i].Turn, "w%d.b%d", &w, &b)
		if last, ok := lastBatch[w]; ok && b <= last {
			t.Errorf("History(%q): writer %d batch %d after batch %d, want each writer's batches in order", key, w, b, last)
		}
		lastBatch[w] = b
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

// ---- turns ----

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

// ---- usage ----

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

// ---- pending ----

func (r *runner) pending(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("p")
	want := echogate.PendingTurn{
		Session: key, Turn: u.key("t1"), Kind: echogate.PauseApproval, CallID: "call_9", Tool: "run_command",
		State:       []byte(`{"messages":[{"role":"user","content":"rm -rf"}],"bin":"\u0000\u00ff"}`),
		Prompt:      echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C1", ID: "1700000000.000200"},
		RequestedBy: "slack:U1", CreatedAt: r.at(time.Second), ExpiresAt: r.at(24 * time.Hour),
	}
	must(t, "SavePending", s.SavePending(ctx, want))
	got, err := s.GetPending(ctx, key)
	must(t, "GetPending", err)
	checkPending(t, "GetPending", got, want)

	// Saving again replaces: one pending turn per session.
	repl := echogate.PendingTurn{Session: key, Turn: u.key("t2"), Kind: echogate.PauseAsk, CallID: "call_10", Tool: "ask_user",
		State: []byte{0, 1, 2, 255}, RequestedBy: "slack:U2", CreatedAt: r.at(2 * time.Second)}
	must(t, "SavePending(replace)", s.SavePending(ctx, repl))
	got, err = s.GetPending(ctx, key)
	must(t, "GetPending", err)
	checkPending(t, "GetPending after replace", got, repl)

	if byPrompt, err := s.PendingByPrompt(ctx, want.Prompt); err == nil {
		t.Errorf("PendingByPrompt(replaced prompt) = %+v, want ErrNotFound", byPrompt)
	}
	repl.Prompt = echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C1", ID: "1700000000.000300"}
	must(t, "SavePending(with prompt)", s.SavePending(ctx, repl))
	got, err = s.PendingByPrompt(ctx, repl.Prompt)
	must(t, "PendingByPrompt", err)
	checkPending(t, "PendingByPrompt", got, repl)
	_, err = s.PendingByPrompt(ctx, echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C2", ID: repl.Prompt.ID})
	checkNotFound(t, "PendingByPrompt(same id, other channel)", err)

	must(t, "DeletePending", s.DeletePending(ctx, key))
	_, err = s.GetPending(ctx, key)
	checkNotFound(t, "GetPending after delete", err)
	checkNotFound(t, "DeletePending twice", s.DeletePending(ctx, key))
}

func (r *runner) listPending(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	var keys []echogate.SessionKey
	for i, off := range []time.Duration{3, 1, 2} {
		k := u.session(fmt.Sprintf("p%d", i))
		keys = append(keys, k)
		must(t, "SavePending", s.SavePending(ctx, echogate.PendingTurn{Session: k, Turn: "t", Kind: echogate.PauseAsk, CreatedAt: r.at(off * time.Second)}))
	}
	all, err := s.ListPending(ctx, 0)
	must(t, "ListPending", err)
	var got []echogate.SessionKey
	for i, p := range all {
		if i > 0 && p.CreatedAt.Before(all[i-1].CreatedAt) {
			t.Errorf("ListPending()[%d].CreatedAt = %v before [%d] %v, want oldest first", i, p.CreatedAt, i-1, all[i-1].CreatedAt)
		}
		if u.mine(string(p.Session)) {
			got = append(got, p.Session)
		}
	}
	if want := []echogate.SessionKey{keys[1], keys[2], keys[0]}; !slices.Equal(got, want) {
		t.Errorf("ListPending(0) ours = %q, want %q", got, want)
	}
	limited, err := s.ListPending(ctx, 2)
	must(t, "ListPending(2)", err)
	if len(limited) != 2 {
		t.Errorf("ListPending(2) returned %d, want 2", len(limited))
	}
}

// ---- errors ----

func (r *runner) notFound(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	missing := u.session("missing")
	for name, call := range map[string]func() error{
		"GetSession":    func() error { _, err := s.GetSession(ctx, missing); return err },
		"DeleteSession": func() error { return s.DeleteSession(ctx, missing) },
		"GetTurn":       func() error { _, err := s.GetTurn(ctx, u.key("missing")); return err },
		"UpdateTurn": func() error {
			return s.UpdateTurn(ctx, echogate.TurnRecord{ID: u.key("missing"), Session: missing, Status: echogate.TurnDoneSt})
		},
		"GetPending":    func() error { _, err := s.GetPending(ctx, missing); return err },
		"DeletePending": func() error { return s.DeletePending(ctx, missing) },
		"CompleteEvent": func() error { return s.CompleteEvent(ctx, u.key("missing"), r.at(0)) },
	} {
		checkNotFound(t, name+"(missing)", call())
	}
	// Listing nothing is not an error.
	for name, call := range map[string]func() (int, error){
		"History":   func() (int, error) { h, err := s.History(ctx, missing, 0); return len(h), err },
		"Grants":    func() (int, error) { g, err := s.Grants(ctx, missing, "web:u"); return len(g), err },
		"ListTurns": func() (int, error) { l, err := s.ListTurns(ctx, missing, 0); return len(l), err },
		"ListUsage": func() (int, error) {
			l, err := s.ListUsage(ctx, echogate.UsageFilter{Session: missing}, 0)
			return len(l), err
		},
	} {
		if n, err := call(); err != nil || n != 0 {
			t.Errorf("%s(missing) = %d entries, %v; want 0, nil", name, n, err)
		}
	}
}

func (r *runner) rejectsEmptyKeys(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	for name, call := range map[string]func() error{
		"ClaimEvent(\"\")": func() error { _, err := s.ClaimEvent(ctx, "", nil, r.at(0)); return err },
		"UpsertSession(Key \"\")": func() error {
			return s.UpsertSession(ctx, echogate.SessionInfo{CreatedAt: r.at(0), UpdatedAt: r.at(0)})
		},
		"AppendMessages(\"\")":  func() error { return s.AppendMessages(ctx, "", "t", []echogate.Message{userMsg("x")}, r.at(0)) },
		"GrantTool(\"\", tool)": func() error { return s.GrantTool(ctx, "", "u", "tool", "u", r.at(0)) },
		"GrantTool(key, \"\")":  func() error { return s.GrantTool(ctx, u.session("k"), "u", "", "u", r.at(0)) },
		"GrantTool(no user)":    func() error { return s.GrantTool(ctx, u.session("k"), "", "tool", "u", r.at(0)) },
		"CreateTurn(ID \"\")": func() error {
			return s.CreateTurn(ctx, echogate.TurnRecord{Session: u.session("k"), StartedAt: r.at(0)})
		},
		"SavePending(Session \"\")": func() error { return s.SavePending(ctx, echogate.PendingTurn{Turn: "t", CreatedAt: r.at(0)}) },
	} {
		if err := call(); err == nil {
			t.Errorf("%s = nil, want an error", name)
		}
	}
}

func (r *runner) timePrecision(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	// Nanoseconds in a non-UTC zone: stored as an instant, returned in UTC, to >= 1ms precision.
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	at := time.Date(2031, 3, 4, 5, 6, 7, 123456789, zone)
	check := func(what string, got time.Time) {
		t.Helper()
		if got.Location() != time.UTC {
			t.Errorf("%s location = %v, want UTC", what, got.Location())
		}
		if d := got.Sub(at); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%s = %v, want %v within 1ms", what, got, at.UTC())
		}
	}
	key := u.session("time")
	must(t, "UpsertSession", s.UpsertSession(ctx, echogate.SessionInfo{Key: key, CreatedAt: at, UpdatedAt: at}))
	si, err := s.GetSession(ctx, key)
	must(t, "GetSession", err)
	check("SessionInfo.CreatedAt", si.CreatedAt)
	check("SessionInfo.UpdatedAt", si.UpdatedAt)

	must(t, "AppendMessages", s.AppendMessages(ctx, key, "t", []echogate.Message{userMsg("x")}, at))
	h, err := s.History(ctx, key, 0)
	must(t, "History", err)
	if len(h) == 1 {
		check("StoredMessage.At", h[0].At)
	}
	id := u.key("turn")
	must(t, "CreateTurn", s.CreateTurn(ctx, echogate.TurnRecord{ID: id, Session: key, StartedAt: at, EndedAt: at}))
	tr, err := s.GetTurn(ctx, id)
	must(t, "GetTurn", err)
	check("TurnRecord.StartedAt", tr.StartedAt)
	check("TurnRecord.EndedAt", tr.EndedAt)

	must(t, "SavePending", s.SavePending(ctx, echogate.PendingTurn{Session: key, CreatedAt: at, ExpiresAt: at}))
	p, err := s.GetPending(ctx, key)
	must(t, "GetPending", err)
	check("PendingTurn.CreatedAt", p.CreatedAt)
	check("PendingTurn.ExpiresAt", p.ExpiresAt)

	_, err = s.RecordUsage(ctx, echogate.UsageRecord{Session: key, Trigger: echogate.TriggerMessage, At: at})
	must(t, "RecordUsage", err)
	l, err := s.ListUsage(ctx, echogate.UsageFilter{Session: key}, 0)
	must(t, "ListUsage", err)
	if len(l) == 1 {
		check("UsageRecord.At", l[0].At)
	}

	ek := u.key("ev")
	_, err = s.ClaimEvent(ctx, ek, nil, at)
	must(t, "ClaimEvent", err)
	evs, err := s.UnfinishedEvents(ctx, at.Add(time.Millisecond), 0)
	must(t, "UnfinishedEvents", err)
	found := false
	for _, ev := range evs {
		if ev.Key == ek {
			found = true
			check("ClaimedEvent.ClaimedAt", ev.ClaimedAt)
		}
	}
	if !found {
		t.Errorf("UnfinishedEvents(before %v) does not list %q claimed at %v", at.Add(time.Millisecond), ek, at)
	}
}

func (r *runner) cancelledContext(t *testing.T, s Store, u uniq) {
	live := t.Context()
	key := u.session("k")
	// Records for the read methods to find, so a lazy store cannot answer from nothing.
	must(t, "UpsertSession", s.UpsertSession(live, echogate.SessionInfo{Key: key, CreatedAt: r.at(0), UpdatedAt: r.at(0)}))
	must(t, "AppendMessages", s.AppendMessages(live, key, "t", []echogate.Message{userMsg("x")}, r.at(0)))
	must(t, "CreateTurn", s.CreateTurn(live, echogate.TurnRecord{ID: u.key("turn"), Session: key, StartedAt: r.at(0)}))
	must(t, "SavePending", s.SavePending(live, echogate.PendingTurn{Session: key, CreatedAt: r.at(0)}))
	if _, err := s.ClaimEvent(live, u.key("ev"), nil, r.at(0)); err != nil {
		t.Fatalf("ClaimEvent: %v", err)
	}

	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel2()

	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		ctx := c.ctx
		calls := map[string]func() error{
			"ClaimEvent":       func() error { _, err := s.ClaimEvent(ctx, u.key("ev2"), nil, r.at(0)); return err },
			"CompleteEvent":    func() error { return s.CompleteEvent(ctx, u.key("ev"), r.at(0)) },
			"UnfinishedEvents": func() error { _, err := s.UnfinishedEvents(ctx, r.at(time.Hour), 0); return err },
			"UpsertSession": func() error {
				return s.UpsertSession(ctx, echogate.SessionInfo{Key: key, CreatedAt: r.at(0), UpdatedAt: r.at(0)})
			},
			"GetSession":     func() error { _, err := s.GetSession(ctx, key); return err },
			"ListSessions":   func() error { _, err := s.ListSessions(ctx, 0); return err },
			"DeleteSession":  func() error { return s.DeleteSession(ctx, key) },
			"AppendMessages": func() error { return s.AppendMessages(ctx, key, "t", []echogate.Message{userMsg("y")}, r.at(0)) },
			"History":        func() error { _, err := s.History(ctx, key, 0); return err },
			"GrantTool":      func() error { return s.GrantTool(ctx, key, "u", "tool", "u", r.at(0)) },
			"Grants":         func() error { _, err := s.Grants(ctx, key, "u"); return err },
			"CreateTurn": func() error {
				return s.CreateTurn(ctx, echogate.TurnRecord{ID: u.key("turn2"), Session: key, StartedAt: r.at(0)})
			},
			"UpdateTurn": func() error { return s.UpdateTurn(ctx, echogate.TurnRecord{ID: u.key("turn"), Session: key}) },
			"GetTurn":    func() error { _, err := s.GetTurn(ctx, u.key("turn")); return err },
			"ListTurns":  func() error { _, err := s.ListTurns(ctx, key, 0); return err },
			"RecordUsage": func() error {
				_, err := s.RecordUsage(ctx, echogate.UsageRecord{Session: key, At: r.at(0)})
				return err
			},
			"SumUsage":  func() error { _, err := s.SumUsage(ctx, echogate.UsageFilter{Session: key}); return err },
			"ListUsage": func() error { _, err := s.ListUsage(ctx, echogate.UsageFilter{Session: key}, 0); return err },
			"SavePending": func() error {
				return s.SavePending(ctx, echogate.PendingTurn{Session: key, CreatedAt: r.at(0)})
			},
			"GetPending":    func() error { _, err := s.GetPending(ctx, key); return err },
			"DeletePending": func() error { return s.DeletePending(ctx, key) },
			"ListPending":   func() error { _, err := s.ListPending(ctx, 0); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, c.want) {
				t.Errorf("%s(%v ctx) error = %v, want one wrapping %v", name, c.want, err, c.want)
			}
		}
	}
	// Nothing was written by the failed calls.
	if _, err := s.GetSession(live, key); err != nil {
		t.Errorf("GetSession after cancelled DeleteSession = %v, want the session kept", err)
	}
	if h, err := s.History(live, key, 0); err != nil || len(h) != 1 {
		t.Errorf("History after cancelled AppendMessages = %q, %v; want [x]", contents(h), err)
	}
	if ok, err := s.ClaimEvent(live, u.key("ev2"), nil, r.at(0)); err != nil || !ok {
		t.Errorf("ClaimEvent after a cancelled claim = %v, %v; want true, nil", ok, err)
	}
}
