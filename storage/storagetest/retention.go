package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// Retainer is the retention a store offers its janitor (echogate's retention job and the
// compact command): the dedupe records of events, their raw payloads, and idle transcripts.
type Retainer interface {
	Store
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
	ClearEventPayloads(ctx context.Context, before time.Time) (int64, error)
	PruneSessions(ctx context.Context, before time.Time) (int64, error)
	Vacuum(ctx context.Context) error
}

// RunRetention checks the retention methods: completed events lose their payload and then
// their record, unfinished ones keep both; sessions idle since before the cutoff lose their
// transcript, active ones and paused ones keep theirs; the ledger is never touched; Vacuum
// succeeds on a live store.
func RunRetention(t *testing.T, open func(t *testing.T) Retainer) {
	r := retention{ctx: context.Background(), s: open(t), base: time.Now().UTC().Truncate(time.Millisecond)}
	r.events(t)
	r.sessions(t)
	if err := r.s.Vacuum(r.ctx); err != nil {
		t.Errorf("Vacuum = %v", err)
	}
}

// retention is RunRetention's fixture: the store, and keys unique to this run around base.
type retention struct {
	ctx  context.Context
	s    Retainer
	base time.Time
}

func (r retention) key(n string) string { return fmt.Sprintf("ret:%d:%s", r.base.UnixNano(), n) }

func (r retention) sess(n string) echogate.SessionKey { return echogate.SessionKey(r.key(n)) }

// events: completed events lose their payload, then (once old) their dedupe record; an
// unfinished one keeps both.
func (r retention) events(t *testing.T) {
	ctx, s, base, key := r.ctx, r.s, r.base, r.key
	// Events: one done long ago, one done just now, one unfinished.
	for _, e := range []struct {
		name string
		at   time.Time
		done bool
	}{{"old", base.Add(-10 * 24 * time.Hour), true}, {"new", base.Add(-time.Minute), true}, {"open", base.Add(-10 * 24 * time.Hour), false}} {
		if _, err := s.ClaimEvent(ctx, key(e.name), []byte(`{"text":"raw payload of `+e.name+`"}`), e.at); err != nil {
			t.Fatal(err)
		}
		if e.done {
			if err := s.CompleteEvent(ctx, key(e.name), e.at); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := s.ClearEventPayloads(ctx, base); err != nil || n < 2 {
		t.Errorf("ClearEventPayloads = %d, %v; want at least the 2 completed events", n, err)
	}
	if n, err := s.ClearEventPayloads(ctx, base); err != nil || n != 0 {
		t.Errorf("ClearEventPayloads again = %d, %v; want 0 (already cleared)", n, err)
	}
	if claimed, err := s.ClaimEvent(ctx, key("new"), []byte(`{}`), base); err != nil || claimed {
		t.Errorf("ClaimEvent(new) after clearing its payload = %v, %v; want false: the dedupe record stays", claimed, err)
	}
	if _, err := s.PruneEvents(ctx, base.Add(-3*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if claimed, err := s.ClaimEvent(ctx, key("new"), []byte(`{}`), base); err != nil || claimed {
		t.Errorf("ClaimEvent(new) after pruning = %v, %v; want false: recent records are kept", claimed, err)
	}
	unfinished, err := s.UnfinishedEvents(ctx, base, 1000)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range unfinished {
		if e.Key == key("open") {
			found = true
			if string(e.Payload) != `{"text":"raw payload of open"}` {
				t.Errorf("unfinished event payload = %q, want it kept for the replay", e.Payload)
			}
		}
	}
	if !found {
		t.Errorf("the unfinished event is gone after pruning; it must stay until completed")
	}
	if claimed, err := s.ClaimEvent(ctx, key("old"), []byte(`{}`), base); err != nil || !claimed {
		t.Errorf("ClaimEvent(old) after pruning = %v, %v; want true: its record was pruned", claimed, err)
	}
}

// sessions: a session idle since before the cutoff loses its transcript and record; an active
// one and an idle but paused one keep theirs; the ledger keeps every session's usage.
func (r retention) sessions(t *testing.T) {
	ctx, s, base, sess := r.ctx, r.s, r.base, r.sess
	// Sessions: idle, active, and idle but paused.
	old, recent := base.Add(-100*24*time.Hour), base.Add(-time.Hour)
	for _, x := range []struct {
		name string
		at   time.Time
	}{{"idle", old}, {"active", recent}, {"paused", old}} {
		k := sess(x.name)
		if err := s.UpsertSession(ctx, echogate.SessionInfo{Key: k, CreatedAt: x.at, UpdatedAt: x.at}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendMessages(ctx, k, "t1", []echogate.Message{{Role: echogate.RoleUser, Content: "hello"}}, x.at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordUsage(ctx, echogate.UsageRecord{Session: k, Usage: echogate.Usage{InputTokens: 10}, At: x.at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SavePending(ctx, echogate.PendingTurn{Session: sess("paused"), Turn: "t1", Kind: echogate.PauseApproval, CallID: "c1", Tool: "x", CreatedAt: old}); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneSessions(ctx, base.Add(-90*24*time.Hour))
	if err != nil || n < 1 {
		t.Errorf("PruneSessions = %d, %v; want at least the idle session", n, err)
	}
	for name, gone := range map[string]bool{"idle": true, "active": false, "paused": false} {
		h, err := s.History(ctx, sess(name), 10)
		if err != nil {
			t.Fatal(err)
		}
		_, gerr := s.GetSession(ctx, sess(name))
		if gone && (len(h) != 0 || !errors.Is(gerr, echogate.ErrNotFound)) {
			t.Errorf("%s session after pruning: %d messages, GetSession err %v; want none and ErrNotFound", name, len(h), gerr)
		}
		if !gone && (len(h) != 1 || gerr != nil) {
			t.Errorf("%s session after pruning: %d messages, GetSession err %v; want it kept", name, len(h), gerr)
		}
		u, err := s.SumUsage(ctx, echogate.UsageFilter{Session: sess(name)})
		if err != nil || u.InputTokens != 10 {
			t.Errorf("%s session usage after pruning = %d tokens, %v; want 10: the ledger is kept", name, u.InputTokens, err)
		}
	}
}
