package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// A streamed answer's message is in the turn log as soon as the channel created it.
func TestStreamedMessageIsRecordedInTheTurnLog(t *testing.T) {
	h := start(t, opts{}, agenttest.Reply("Hello there, friend."))
	h.submit(msg("s1", "ann", "hi"))
	d := h.waitDone()
	posts := h.rep.Posts()
	if len(posts) != 1 || !posts[0].Streamed {
		t.Fatalf("posts = %+v, want one streamed answer", posts)
	}
	got, err := h.store.GetPosting(context.Background(), d.Turn)
	if err != nil || got != posts[0].Ref {
		t.Errorf("GetPosting(%s) = %+v, %v; want the streamed message %+v", d.Turn, got, err, posts[0].Ref)
	}
}

// deadStreamedTurn leaves the store as a kill mid-stream leaves it: the event claimed and
// unfinished, its turn running, the streamed message recorded; it returns the event and that
// message.
func deadStreamedTurn(t *testing.T, store *pipelinetest.MemStore, text string) (echogate.InboundEvent, echogate.MessageRef) {
	t.Helper()
	ctx := context.Background()
	ev := msg("s1", "ann", text)
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	if _, err := store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt); err != nil {
		t.Fatal(err)
	}
	must(t, store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_dead", Session: ev.SessionKey(), EventKey: ev.DedupeKey(),
		Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt}))
	ref := echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: ev.Conversation.Channel, ID: "m-partial"}
	must(t, store.RecordPosting(ctx, "t_dead", ref))
	return ev, ref
}

// A turn killed mid-stream: the replay's answer goes into the dead turn's partial message
// (Outbound.Continues), so one message holds the full answer; the new turn records it as its
// own, in case it is killed too.
func TestReplayContinuesTheInterruptedStream(t *testing.T) {
	store := pipelinetest.NewMemStore()
	_, ref := deadStreamedTurn(t, store, "hello?")
	h := start(t, opts{store: store}, agenttest.Reply("The full answer."))
	d := h.waitDone()
	posts := h.rep.Posts()
	if len(posts) != 1 || posts[0].Out.Continues != ref || posts[0].Ref != ref || posts[0].Text != "The full answer." {
		t.Fatalf("posts = %+v, want the full answer once, continuing %+v", posts, ref)
	}
	if got, _ := store.GetPosting(context.Background(), d.Turn); got != ref {
		t.Errorf("the new turn's posting = %+v, want the continued message %+v", got, ref)
	}
	if tr, _ := store.GetTurn(context.Background(), "t_dead"); tr.Status != echogate.TurnFailed || !strings.HasPrefix(tr.Error, "interrupted:") {
		t.Errorf("dead turn = %s %q, want closed as interrupted", tr.Status, tr.Error)
	}
}

// When the replay's outcome is a message of its own (an approval prompt), the partial message
// is finished empty, which channels answer by removing it.
func TestReplayThatPausesRemovesThePartialMessage(t *testing.T) {
	store := pipelinetest.NewMemStore()
	_, ref := deadStreamedTurn(t, store, "delete a")
	del := newTool("delete_file", tools.Sensitive, "deleted a")
	h := start(t, opts{store: store, tools: []tools.Tool{del}}, agenttest.CallTool("delete_file", `{"path":"a"}`))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("replayed turn = %+v, want paused", d)
	}
	var removed, prompts int
	for _, p := range h.rep.Posts() {
		switch {
		case p.Streamed && p.Out.Continues == ref && p.Text == "":
			removed++
		case p.Out.Kind == echogate.OutApprovalPrompt:
			prompts++
		}
	}
	if removed != 1 || prompts != 1 {
		t.Errorf("posts = %+v; want the partial message finished empty once and one prompt", h.rep.Posts())
	}
}

// postingCheck is a streaming replier that notes, at each Append after the first, whether the
// turn log already holds the stream's message: the record must be durable before more of the
// answer is shown.
type postingCheck struct {
	pipelinetest.StreamingReplier
	store   *pipelinetest.MemStore
	mu      sync.Mutex
	missing int // later appends that found no record
	later   int // appends after the first
}

func (r *postingCheck) StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error) {
	s, err := r.StreamingReplier.StartStream(ctx, out)
	if err != nil {
		return nil, err
	}
	return &checkedStream{Stream: s, r: r, turn: out.Turn}, nil
}

type checkedStream struct {
	echogate.Stream
	r       *postingCheck
	turn    string
	appends int
}

func (s *checkedStream) OnPost(fn func(echogate.MessageRef)) {
	s.Stream.(echogate.PostNotifier).OnPost(fn)
}

func (s *checkedStream) Append(ctx context.Context, delta string) error {
	s.appends++
	if s.appends > 1 {
		ref, err := s.r.store.GetPosting(ctx, s.turn)
		s.r.mu.Lock()
		s.r.later++
		if err != nil || ref.IsZero() {
			s.r.missing++
		}
		s.r.mu.Unlock()
	}
	return s.Stream.Append(ctx, delta)
}

func TestStreamedMessageIsRecordedBeforeMoreIsShown(t *testing.T) {
	store := pipelinetest.NewMemStore()
	var check *postingCheck
	h := start(t, opts{store: store, deps: func(d *pipeline.Deps) {
		rep := pipelinetest.NewReplier(echogate.PlatformWeb)
		check = &postingCheck{StreamingReplier: pipelinetest.StreamingReplier{Replier: rep}, store: store}
		d.Repliers = map[string]pipeline.Replier{echogate.PlatformWeb: check}
	}}, agenttest.Step{Text: "A longer answer, streamed in many small pieces.", FragmentSize: 3})
	h.submit(msg("s1", "ann", "hi"))
	select {
	case <-check.Replier.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("no turn finished within 10s")
	}
	check.mu.Lock()
	defer check.mu.Unlock()
	if check.later == 0 || check.missing != 0 {
		t.Errorf("%d of %d appends after the first found no recorded message, want 0 of more than 0", check.missing, check.later)
	}
}
