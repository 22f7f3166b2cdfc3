// The edges of every store call: not found, empty keys refused, time precision kept, a
// cancelled context.

package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

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
