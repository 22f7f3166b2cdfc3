// The transcript's part of Run: append and history (limits, since), a turn's finish, message
// round trips and concurrent appends.

package storagetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

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
