package storagetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// recordProgress checks RecordProgress: the messages are appended after the transcript's last
// entry, the ledger entries get their IDs and are found by turn, and a cancelled call writes
// neither part.
func (r *runner) recordProgress(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("progress")
	turn := u.key("turn")
	must(t, "AppendMessages", s.AppendMessages(ctx, key, u.key("earlier"), []echogate.Message{userMsg("before")}, r.at(0)))
	usage := []echogate.UsageRecord{{Turn: turn, Session: key, UserID: "web:u", Channel: "web:c", Trigger: echogate.TriggerMessage,
		Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "m", InputTokens: 7, OutputTokens: 2, CostUSD: 0.25}, At: r.at(time.Second)}}
	must(t, "RecordProgress", s.RecordProgress(ctx, key, turn, []echogate.Message{userMsg("q")}, usage, r.at(time.Second)))
	if usage[0].ID == 0 {
		t.Errorf("RecordProgress left the usage entry's ID 0; want the ledger's id")
	}
	h, err := s.History(ctx, key, 0)
	must(t, "History", err)
	if got := contents(h); !slices.Equal(got, []string{"before", "q"}) || h[1].Turn != turn || h[1].Seq != h[0].Seq+1 {
		t.Errorf("History after RecordProgress = %q, want [before q], q of turn %q numbered after before", got, turn)
	}
	led, err := s.ListUsage(ctx, echogate.UsageFilter{Turn: turn}, 0)
	if err != nil || len(led) != 1 || led[0].ID != usage[0].ID || led[0].Usage.InputTokens != 7 || !closeUSD(led[0].Usage.CostUSD, 0.25) {
		t.Errorf("ledger of the turn after RecordProgress = %+v, %v; want the one entry, id %d", led, err, usage[0].ID)
	}
	// Usage alone, and messages alone, are each a valid progress.
	more := []echogate.UsageRecord{usage[0]}
	more[0].ID = 0
	must(t, "RecordProgress without messages", s.RecordProgress(ctx, key, turn, nil, more, r.at(2*time.Second)))
	if more[0].ID <= usage[0].ID {
		t.Errorf("RecordProgress: second entry id %d, want more than %d (increasing)", more[0].ID, usage[0].ID)
	}
	must(t, "RecordProgress without usage", s.RecordProgress(ctx, key, turn, []echogate.Message{userMsg("q2")}, nil, r.at(2*time.Second)))
	if h, _ := s.History(ctx, key, 0); !slices.Equal(contents(h), []string{"before", "q", "q2"}) {
		t.Errorf("History after RecordProgress without usage = %q, want [before q q2]", contents(h))
	}
	// A call cancelled before it runs writes nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	gone := []echogate.UsageRecord{usage[0]}
	gone[0].ID = 0
	if err := s.RecordProgress(cctx, key, turn, []echogate.Message{userMsg("never")}, gone, r.at(3*time.Second)); !errors.Is(err, context.Canceled) {
		t.Errorf("RecordProgress on a cancelled context = %v, want context.Canceled", err)
	}
	if gone[0].ID != 0 {
		t.Errorf("RecordProgress on a cancelled context set ID %d, want 0 (nothing written)", gone[0].ID)
	}
	if h, _ := s.History(ctx, key, 0); len(h) != 3 {
		t.Errorf("History after a cancelled RecordProgress = %q, want nothing appended", contents(h))
	}
	if led, _ := s.ListUsage(ctx, echogate.UsageFilter{Turn: turn}, 0); len(led) != 2 {
		t.Errorf("ledger after a cancelled RecordProgress has %d entries, want 2", len(led))
	}
}
