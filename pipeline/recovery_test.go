package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// crashAfterDecision pauses a turn for approval in a first process, then leaves the store as a
// crash leaves it right after the ✅ was recorded: the decision event claimed and unfinished,
// the resuming turn running with its resume record. It returns the decision event.
func crashAfterDecision(t *testing.T, store *pipelinetest.MemStore, del tools.Tool) echogate.InboundEvent {
	t.Helper()
	h := start(t, opts{store: store, tools: []tools.Tool{del}}, agenttest.CallTool("delete_file", `{"path":"a"}`))
	h.submit(msg("s1", "ann", "delete a"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("first turn = %+v, want paused", d)
	}
	prompt := promptOf(t, h)
	h.stop()

	pend, err := store.GetPending(context.Background(), "web:s1")
	if err != nil {
		t.Fatal(err)
	}
	pend.Prompt = prompt.Ref
	return crashAfterDecisionOn(t, store, pend)
}

// crashAfterDecisionOn records the ✅ on pend's prompt as a crash right after it leaves it:
// the decision event claimed and unfinished, the resuming turn t_resumed running.
func crashAfterDecisionOn(t *testing.T, store *pipelinetest.MemStore, pend echogate.PendingTurn) echogate.InboundEvent {
	t.Helper()
	ctx := context.Background()
	ev := reaction("s1", "ann", echogate.ReactionApprove, pend.Prompt)
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	if _, err := store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt); err != nil {
		t.Fatal(err)
	}
	decision, _ := json.Marshal(agent.Resume{CallID: pend.CallID, Approved: true})
	r := echogate.TurnResume{Turn: "t_resumed", Session: pend.Session, Paused: pend, EventKey: ev.DedupeKey(),
		Decision: decision, DecidedBy: "web:ann", At: ev.ReceivedAt}
	rec := echogate.TurnRecord{ID: r.Turn, Session: r.Session, EventKey: r.EventKey, UserID: pend.RequestedBy,
		Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt}
	if err := store.ResumeTurn(ctx, r, rec); err != nil {
		t.Fatal(err)
	}
	return ev
}

// A crash during an approved (resumed) turn: the restart finishes that turn from its resume
// record, the approved tool runs exactly once whatever the crash interrupted, and the answer
// comes once.
func TestRecoveryFinishesResumedTurn(t *testing.T) {
	for name, tt := range map[string]struct {
		started  bool   // the tool's start was recorded before the crash
		result   string // its result was recorded ("" none)
		runs     int32  // tool runs after the restart
		toolSeen string // what the model sees as the call's result
	}{
		"killed before the tool ran":            {runs: 1, toolSeen: "deleted a"},
		"killed while the tool ran":             {started: true, runs: 0, toolSeen: "may or may not have completed"},
		"killed after the tool's result landed": {started: true, result: `{"Content":"deleted a (before)"}`, runs: 0, toolSeen: "deleted a (before)"},
	} {
		t.Run(name, func(t *testing.T) {
			store := pipelinetest.NewMemStore()
			del := newTool("delete_file", tools.Sensitive, "deleted a")
			crashAfterDecision(t, store, del)
			ctx := context.Background()
			if tt.started {
				must(t, store.RecordToolRun(ctx, "t_resumed", "call_1", nil, time.Now()))
			}
			if tt.result != "" {
				must(t, store.RecordToolRun(ctx, "t_resumed", "call_1", []byte(tt.result), time.Now()))
			}
			before := del.calls.Load()
			h := start(t, opts{store: store, tools: []tools.Tool{del}}, agenttest.Reply("Done."))
			if d := h.waitDone(); d.Status != "done" || d.Text != "Done." || d.Turn != "t_resumed" {
				t.Fatalf("recovered turn = %+v, want t_resumed done with the answer", d)
			}
			if n := del.calls.Load() - before; n != tt.runs {
				t.Errorf("tool ran %d times after the restart, want %d", n, tt.runs)
			}
			reqs := h.model.Requests()
			if len(reqs) != 1 {
				t.Fatalf("model calls after the restart = %d, want 1", len(reqs))
			}
			msgs := reqs[0].Messages
			if last := msgs[len(msgs)-1]; last.Role != echogate.RoleTool || !strings.Contains(last.Content, tt.toolSeen) {
				t.Errorf("the model saw the call's result %q, want it to contain %q", last.Content, tt.toolSeen)
			}
			checkSettled(t, store)
		})
	}
}

// checkSettled: no turn left running or paused, no pause, no resume record, no event unfinished.
func checkSettled(t *testing.T, store *pipelinetest.MemStore) {
	t.Helper()
	ctx := context.Background()
	turns, _ := store.ListTurns(ctx, "", 0)
	for _, tr := range turns {
		if tr.Status == echogate.TurnRunning || tr.Status == echogate.TurnPaused {
			t.Errorf("turn %s left %s", tr.ID, tr.Status)
		}
	}
	if pend, _ := store.ListPending(ctx, 0); len(pend) != 0 {
		t.Errorf("pauses left: %+v", pend)
	}
	if evs, _ := store.UnfinishedEvents(ctx, time.Now().Add(time.Hour), 0); len(evs) != 0 {
		t.Errorf("unfinished events left: %d", len(evs))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A replayed event whose turn had ended (only the event's completion was lost in the crash) is
// completed without being answered again.
func TestReplayOfEndedTurnOnlyCompletesTheEvent(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "hello?")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
	store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_done", Session: ev.SessionKey(), EventKey: ev.DedupeKey(),
		Status: echogate.TurnDoneSt, StartedAt: ev.ReceivedAt, EndedAt: ev.ReceivedAt})
	watch := &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})}
	h := start(t, opts{store: store, deps: func(d *pipeline.Deps) { d.Store = watch }}, agenttest.Reply("answered twice"))
	select {
	case <-watch.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the replayed event was not completed within 10s")
	}
	if n := h.model.Calls(); n != 0 || len(h.rep.Posts()) != 0 {
		t.Errorf("model calls = %d, posts %q; want none: the replayed event was answered again", n, h.rep.Texts())
	}
	checkSettled(t, store)
}

// completionWatch closes done when the event key is completed.
type completionWatch struct {
	*pipelinetest.MemStore
	key  string
	done chan struct{}
	once atomic.Bool
}

func (s *completionWatch) CompleteEvent(ctx context.Context, key string, at time.Time) error {
	err := s.MemStore.CompleteEvent(ctx, key, at)
	if key == s.key && s.once.CompareAndSwap(false, true) {
		close(s.done)
	}
	return err
}

func (s *completionWatch) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	return finishVia(ctx, s, end)
}

// Resolved pauses stop showing `paused`: the paused turn becomes resumed, and the resumed turn
// ends done.
func TestResolvedPauseIsNotPaused(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "ok")
	h := start(t, opts{tools: []tools.Tool{del}}, agenttest.CallTool("delete_file", `{}`), agenttest.Reply("deleted"))
	h.submit(msg("s1", "ann", "delete"))
	paused := h.waitDone()
	h.submit(reaction("s1", "ann", echogate.ReactionApprove, promptOf(t, h).Ref))
	if d := h.waitDone(); d.Status != "done" {
		t.Fatalf("resumed = %+v", d)
	}
	if tr, _ := h.store.GetTurn(context.Background(), paused.Turn); tr.Status != echogate.TurnResumed {
		t.Errorf("paused turn after the decision = %s, want %s", tr.Status, echogate.TurnResumed)
	}
	checkSettled(t, h.store)
}

// failingReplier refuses every post, as a platform answering 500 does after its retries.
type failingReplier struct {
	*pipelinetest.Replier
	sends atomic.Int32
}

func (r *failingReplier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	r.sends.Add(1)
	return echogate.MessageRef{}, errors.New("platform: 500 internal_error")
}

// An answer the platform does not take: the turn is closed as failed (never left running),
// the user is told once more where possible, and the event is completed.
func TestUndeliveredAnswerFailsTheTurn(t *testing.T) {
	rep := &failingReplier{Replier: pipelinetest.NewReplier(echogate.PlatformWeb)}
	h := start(t, opts{deps: func(d *pipeline.Deps) {
		d.Repliers = map[string]pipeline.Replier{echogate.PlatformWeb: rep}
	}}, agenttest.Reply("the answer"))
	h.rep = rep.Replier
	h.submit(msg("s1", "ann", "hi"))
	d := h.waitDone()
	if d.Status != string(echogate.TurnFailed) {
		t.Errorf("done = %+v, want status %s", d, echogate.TurnFailed)
	}
	if n := rep.sends.Load(); n != 2 {
		t.Errorf("posts tried = %d, want 2 (the answer, then the notice that it could not be delivered)", n)
	}
	tr, _ := h.store.GetTurn(context.Background(), d.Turn)
	if tr.Status != echogate.TurnFailed || !strings.Contains(tr.Error, "post answer") {
		t.Errorf("turn record = %+v, want failed with the post error", tr)
	}
	checkSettled(t, h.store)
}

// A turn that died after its pause was saved but before its end was written: the replayed
// event finds the pause its own outcome (it does not supersede it), and the record shows it
// paused.
func TestReplayOfTurnThatDiedWhilePausing(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "delete a")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
	store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_pausing", Session: ev.SessionKey(), EventKey: ev.DedupeKey(),
		Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt})
	store.SavePending(ctx, echogate.PendingTurn{Session: ev.SessionKey(), Turn: "t_pausing", Kind: echogate.PauseApproval,
		CallID: "call_1", Tool: "delete_file", State: []byte(`{"pending":[{"id":"call_1","name":"delete_file"}]}`),
		RequestedBy: "web:ann", CreatedAt: ev.ReceivedAt})
	watch := &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})}
	h := start(t, opts{store: store, deps: func(d *pipeline.Deps) { d.Store = watch }}, agenttest.Reply("superseded"))
	select {
	case <-watch.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the replayed event was not completed within 10s")
	}
	if n := h.model.Calls(); n != 0 {
		t.Errorf("model calls = %d, want 0: the replay superseded its own pause", n)
	}
	pend, err := store.GetPending(ctx, ev.SessionKey())
	if err != nil {
		t.Errorf("pause after the replay: %v, want it kept", err)
	}
	// Its prompt's reference was never saved and the platform shows no prompt of the turn:
	// it is posted again and its reference saved.
	if posts := h.rep.Posts(); len(posts) != 1 || posts[0].Out.Kind != echogate.OutApprovalPrompt || pend.Prompt != posts[0].Ref {
		t.Errorf("posts = %+v, pause's prompt %+v; want the prompt posted again and its reference saved", posts, pend.Prompt)
	}
	if tr, _ := store.GetTurn(ctx, "t_pausing"); tr.Status != echogate.TurnPaused {
		t.Errorf("turn record = %s, want paused", tr.Status)
	}
}

// A turn that posted its answer and died before its end was written: the replay finds the
// answer on the platform by the turn's id and records it, instead of answering again.
func TestReplayOfTurnThatPostedItsAnswer(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "hello?")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
	store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_posted", Session: ev.SessionKey(), EventKey: ev.DedupeKey(),
		Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt})
	rep := pipelinetest.NewReplier(echogate.PlatformWeb)
	if _, err := rep.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, Turn: "t_posted", Text: "hi there"}); err != nil {
		t.Fatal(err)
	}
	watch := &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})}
	h := start(t, opts{store: store, deps: func(d *pipeline.Deps) {
		d.Store = watch
		d.Repliers = map[string]pipeline.Replier{echogate.PlatformWeb: rep}
	}}, agenttest.Reply("answered twice"))
	select {
	case <-watch.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the replayed event was not completed within 10s")
	}
	if n := h.model.Calls(); n != 0 || len(rep.Posts()) != 1 {
		t.Errorf("model calls %d, posts %q; want none more: the posted answer was answered again", n, rep.Texts())
	}
	if tr, _ := store.GetTurn(ctx, "t_posted"); tr.Status != echogate.TurnDoneSt {
		t.Errorf("turn record = %s, want done", tr.Status)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hello?|assistant:hi there"; got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
}

// A resumed turn that posted its answer and died before its end was written is not run again.
func TestRecoveryOfResumedTurnThatPostedItsAnswer(t *testing.T) {
	store := pipelinetest.NewMemStore()
	del := newTool("delete_file", tools.Sensitive, "deleted a")
	ev := crashAfterDecision(t, store, del)
	ctx := context.Background()
	must(t, store.RecordToolRun(ctx, "t_resumed", "call_1", nil, time.Now()))
	must(t, store.RecordToolRun(ctx, "t_resumed", "call_1", []byte(`{"Content":"deleted a"}`), time.Now()))
	rep := pipelinetest.NewReplier(echogate.PlatformWeb)
	if _, err := rep.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, Turn: "t_resumed", Text: "Done."}); err != nil {
		t.Fatal(err)
	}
	runs := del.calls.Load()
	watch := &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})}
	h := start(t, opts{store: store, tools: []tools.Tool{del}, deps: func(d *pipeline.Deps) {
		d.Store = watch
		d.Repliers = map[string]pipeline.Replier{echogate.PlatformWeb: rep}
	}}, agenttest.Reply("answered twice"))
	select {
	case <-watch.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the decision's event was not completed within 10s")
	}
	if n := h.model.Calls(); n != 0 || del.calls.Load() != runs || len(rep.Posts()) != 1 {
		t.Errorf("model calls %d, tool runs +%d, posts %q; want nothing more", n, del.calls.Load()-runs, rep.Texts())
	}
	got := strings.Join(h.transcript("s1"), "|")
	if !strings.HasSuffix(got, "tool:deleted a|assistant:Done.") {
		t.Errorf("transcript = %s, want it to end with the recorded result and the posted answer", got)
	}
	checkSettled(t, store)
}

// A pause whose prompt was posted but whose reference was not saved: recovery finds the prompt
// on the platform and saves its reference, without posting a second one.
func TestReplayFindsThePromptOfAnInterruptedPause(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "delete a")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
	store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_pausing", Session: ev.SessionKey(), EventKey: ev.DedupeKey(),
		Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt})
	store.SavePending(ctx, echogate.PendingTurn{Session: ev.SessionKey(), Turn: "t_pausing", Kind: echogate.PauseApproval,
		CallID: "call_1", Tool: "delete_file", State: []byte(`{"pending":[{"id":"call_1","name":"delete_file"}]}`),
		RequestedBy: "web:ann", CreatedAt: ev.ReceivedAt})
	rep := pipelinetest.NewReplier(echogate.PlatformWeb)
	prompt, _ := rep.Send(ctx, echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: ev.Conversation, Turn: "t_pausing", Text: "🔐 Approval needed"})
	watch := &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})}
	start(t, opts{store: store, deps: func(d *pipeline.Deps) {
		d.Store = watch
		d.Repliers = map[string]pipeline.Replier{echogate.PlatformWeb: rep}
	}})
	select {
	case <-watch.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the replayed event was not completed within 10s")
	}
	pend, _ := store.GetPending(ctx, ev.SessionKey())
	if len(rep.Posts()) != 1 || pend.Prompt != prompt {
		t.Errorf("posts %q, pause's prompt %+v; want no second prompt and the reference %+v saved", rep.Texts(), pend.Prompt, prompt)
	}
}

// A crash after the pause was saved but before its turn's end, then a decision, then another
// crash: at the restart both the paused turn's event and the decision are replayed. The first
// finds its turn resumed (not running) and is not answered again; the second finishes the
// resumed turn: one answer, the tool run once.
func TestReplayAfterTwoCrashesAroundAPause(t *testing.T) {
	store := pipelinetest.NewMemStore()
	del := newTool("delete_file", tools.Sensitive, "deleted a")
	ctx := context.Background()
	// The pausing event unfinished, its turn still running, its pause saved.
	first := msg("s1", "ann", "delete a")
	first.ReceivedAt = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(first)
	must(t, firstErr(store.ClaimEvent(ctx, first.DedupeKey(), payload, first.ReceivedAt)))
	must(t, store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_paused", Session: first.SessionKey(), EventKey: first.DedupeKey(),
		Status: echogate.TurnRunning, StartedAt: first.ReceivedAt}))
	call := echogate.ToolCall{ID: "call_1", Name: "delete_file", Arguments: `{"path":"a"}`}
	state, _ := json.Marshal(agent.State{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "delete a"},
		{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{call}}}, Pending: []echogate.ToolCall{call},
		Iteration: 1, PauseKind: echogate.PauseApproval})
	pend := echogate.PendingTurn{Session: first.SessionKey(), Turn: "t_paused", Kind: echogate.PauseApproval, CallID: call.ID,
		Tool: call.Name, State: state, RequestedBy: "web:ann", CreatedAt: first.ReceivedAt,
		Prompt: echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: "s1", ID: "prompt"}}
	must(t, store.SavePending(ctx, pend))
	// Then the ✅, and a crash right after it.
	crashAfterDecisionOn(t, store, pend)
	before := del.calls.Load()
	h := start(t, opts{store: store, tools: []tools.Tool{del}}, agenttest.Reply("Done."), agenttest.Reply("answered twice"))
	if d := h.waitDone(); d.Status != "done" || d.Turn != "t_resumed" {
		t.Fatalf("first finished turn after the restart = %+v, want t_resumed done", d)
	}
	h.stop()
	if n := del.calls.Load() - before; n != 1 {
		t.Errorf("tool ran %d times after the restart, want 1", n)
	}
	if n := h.model.Calls(); n != 1 {
		t.Errorf("model calls after the restart = %d, want 1 (the resumed call; the pausing event not answered again)", n)
	}
	checkSettled(t, store)
}

func firstErr(_ bool, err error) error { return err }

// SQLite's two files commit apart: a crash can keep an event's completion and lose its turn's
// end. At start the pipeline reopens such an event, and the replay answers it.
func TestReconcileReopensACompletedEventWhoseTurnRuns(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "hello?")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	must(t, firstErr(store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)))
	must(t, store.CompleteEvent(ctx, ev.DedupeKey(), ev.ReceivedAt))
	must(t, store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_lost", Session: ev.SessionKey(), EventKey: ev.DedupeKey(),
		Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt}))
	h := start(t, opts{store: store}, agenttest.Reply("here"))
	if d := h.waitDone(); d.Text != "here" {
		t.Fatalf("answer after the restart = %+v, want the event answered", d)
	}
	h.stop()
	if tr, _ := store.GetTurn(ctx, "t_lost"); tr.Status != echogate.TurnFailed {
		t.Errorf("lost turn = %s, want closed as failed (interrupted)", tr.Status)
	}
	checkSettled(t, store)
}
