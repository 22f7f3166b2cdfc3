package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// funcTool is a tool backed by a function.
type funcTool struct {
	spec  tools.Spec
	calls atomic.Int32
	fn    func(ctx context.Context, args json.RawMessage) (tools.Result, error)
}

func (f *funcTool) Spec() tools.Spec { return f.spec }
func (f *funcTool) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	f.calls.Add(1)
	return f.fn(ctx, args)
}

func newTool(name string, s tools.Safety, result string) *funcTool {
	return &funcTool{spec: tools.Spec{Name: name, Description: name, Safety: s},
		fn: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Content: result}, nil
		}}
}

type harness struct {
	t      *testing.T
	store  *pipelinetest.MemStore
	rep    *pipelinetest.Replier
	model  *agenttest.ScriptedModel
	p      *pipeline.Pipeline
	cancel context.CancelFunc
	done   chan struct{}
	now    atomic.Pointer[time.Time]
}

type opts struct {
	cfg   pipeline.Config
	tools []tools.Tool
	store *pipelinetest.MemStore
	deps  func(*pipeline.Deps)
	// made, when set, sees the pipeline after New and before Run (test hooks).
	made func(*pipeline.Pipeline)
}

func start(t *testing.T, o opts, steps ...agenttest.Step) *harness {
	t.Helper()
	h := &harness{t: t, store: o.store, rep: pipelinetest.NewReplier(echogate.PlatformWeb), model: agenttest.NewScriptedModel(steps...)}
	if h.store == nil {
		h.store = pipelinetest.NewMemStore()
	}
	reg, err := tools.NewRegistry(o.tools...)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h.now.Store(&now)
	if o.cfg.Now == nil {
		o.cfg.Now = func() time.Time { return *h.now.Load() }
	}
	d := pipeline.Deps{Store: h.store, Model: h.model, Tools: reg,
		Repliers: map[string]pipeline.Replier{echogate.PlatformWeb: pipelinetest.StreamingReplier{Replier: h.rep}}}
	if o.deps != nil {
		o.deps(&d)
	}
	h.p, err = pipeline.New(o.cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if o.made != nil {
		o.made(h.p)
	}
	var ctx context.Context
	ctx, h.cancel = context.WithCancel(context.Background())
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		_ = h.p.Run(ctx)
	}()
	<-h.p.Started()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
}

func (h *harness) advance(d time.Duration) {
	n := h.now.Load().Add(d)
	h.now.Store(&n)
}

var evSeq atomic.Int64

func msg(session, user, text string) echogate.InboundEvent {
	return echogate.InboundEvent{
		ID:           fmt.Sprintf("ev%d", evSeq.Add(1)),
		Kind:         echogate.KindDirect,
		Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: session, DM: true},
		Actor:        echogate.Actor{ID: user},
		Text:         text,
	}
}

func reaction(session, user, emoji string, target echogate.MessageRef) echogate.InboundEvent {
	ev := msg(session, user, "")
	ev.Kind, ev.Reaction, ev.Target = echogate.KindReaction, emoji, target
	return ev
}

func (h *harness) submit(ev echogate.InboundEvent) {
	h.t.Helper()
	if err := h.p.Submit(context.Background(), ev); err != nil {
		h.t.Fatalf("Submit(%s) = %v, want nil", ev.ID, err)
	}
}

// waitDone waits for the next finished turn.
func (h *harness) waitDone() echogate.TurnEvent {
	h.t.Helper()
	select {
	case ev := <-h.rep.Done:
		return ev
	case <-time.After(10 * time.Second):
		h.t.Fatalf("no turn finished within 10s; posts so far: %q", h.rep.Texts())
		return echogate.TurnEvent{}
	}
}

func (h *harness) transcript(session string) []string {
	hist, err := h.store.History(context.Background(), echogate.SessionKey("web:"+session), 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, m := range hist {
		s := string(m.Message.Role)
		switch {
		case len(m.Message.ToolCalls) > 0:
			s += "→" + m.Message.ToolCalls[0].Name
		case m.Message.Role == echogate.RoleTool:
			s += ":" + m.Message.Content
		default:
			s += ":" + m.Message.Content
		}
		out = append(out, s)
	}
	return out
}

func TestAnswerIsStreamedAndStored(t *testing.T) {
	h := start(t, opts{}, agenttest.Reply("Hello there, friend."))
	h.submit(msg("s1", "ann", "hi"))
	done := h.waitDone()
	if done.Status != "done" || done.Text != "Hello there, friend." {
		t.Fatalf("done = %+v, want status done with the answer", done)
	}
	posts := h.rep.Posts()
	if len(posts) != 1 || !posts[0].Streamed || posts[0].Text != "Hello there, friend." || posts[0].Joined() != "Hello there, friend." {
		t.Fatalf("posts = %+v, want one streamed post with the whole answer", posts)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hi|assistant:Hello there, friend."; got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
	var deltas int
	for _, e := range h.rep.Events() {
		if e.Type == echogate.TurnDelta {
			deltas++
		}
	}
	if deltas < 2 {
		t.Errorf("saw %d delta events, want the answer in several", deltas)
	}
}

func TestToolCallTranscript(t *testing.T) {
	clock := newTool("current_time", tools.Safe, "2026-11-30T12:00:00Z")
	h := start(t, opts{tools: []tools.Tool{clock}},
		agenttest.CallTool("current_time", `{}`), agenttest.Reply("It is noon."))
	h.submit(msg("s1", "ann", "what time is it"))
	if d := h.waitDone(); d.Text != "It is noon." {
		t.Fatalf("answer = %q", d.Text)
	}
	want := "user:what time is it|assistant→current_time|tool:2026-11-30T12:00:00Z|assistant:It is noon."
	if got := strings.Join(h.transcript("s1"), "|"); got != want {
		t.Errorf("transcript = %s\nwant %s", got, want)
	}
	turns, _ := h.store.ListTurns(context.Background(), "web:s1", 0)
	if len(turns) != 1 || turns[0].Status != echogate.TurnDoneSt || turns[0].InputTokens == 0 {
		t.Errorf("turns = %+v, want one done turn with usage", turns)
	}
	usage, _ := h.store.ListUsage(context.Background(), echogate.UsageFilter{Turn: turns[0].ID}, 0)
	if len(usage) != 2 {
		t.Errorf("ledger has %d entries for the turn, want 2 (one per model call)", len(usage))
	}
}

func TestDuplicateEventsAnsweredOnceAcrossRestart(t *testing.T) {
	store := pipelinetest.NewMemStore()
	h := start(t, opts{store: store}, agenttest.Reply("one"))
	ev := msg("s1", "ann", "hi")
	h.submit(ev)
	h.submit(ev) // a platform retry
	h.waitDone()
	h.stop()

	h2 := start(t, opts{store: store}) // no steps: a second model call would fail the turn
	h2.submit(ev)
	other := msg("s2", "bob", "ping")
	h2.model.Append(agenttest.Reply("pong"))
	h2.submit(other)
	if d := h2.waitDone(); d.EventID != other.ID {
		t.Fatalf("after restart the turn for %s ran, want only %s", d.EventID, other.ID)
	}
	if got := h.model.Calls() + h2.model.Calls(); got != 2 {
		t.Errorf("model called %d times, want 2", got)
	}
}

func TestUnfinishedEventReplayedAfterRestart(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "are you there?")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	// A crash after the event was recorded and before it was answered.
	if ok, err := store.ClaimEvent(context.Background(), ev.DedupeKey(), payload, ev.ReceivedAt); !ok || err != nil {
		t.Fatal(ok, err)
	}
	h := start(t, opts{store: store}, agenttest.Reply("yes"))
	if d := h.waitDone(); d.EventID != ev.ID || d.Text != "yes" {
		t.Fatalf("done = %+v, want the replayed event answered", d)
	}
	left, _ := store.UnfinishedEvents(context.Background(), time.Now().Add(time.Hour), 10)
	if len(left) != 0 {
		t.Errorf("unfinished after replay = %d, want 0", len(left))
	}
}

func TestSessionsRunInParallel(t *testing.T) {
	gate := make(chan struct{})
	a, b := make(chan struct{}), make(chan struct{})
	h := start(t, opts{},
		agenttest.Step{Text: "a", Gate: gate, Entered: a},
		agenttest.Step{Text: "b", Gate: gate, Entered: b})
	h.submit(msg("s1", "ann", "one"))
	h.submit(msg("s2", "bob", "two"))
	// Both turns reach the model before either may answer: they run concurrently.
	for _, ch := range []chan struct{}{a, b} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("second session did not start while the first was running")
		}
	}
	close(gate)
	h.waitDone()
	h.waitDone()
}

func TestOneSessionRunsInOrder(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{})
	h := start(t, opts{},
		agenttest.Step{Text: "first", Gate: gate, Entered: entered},
		agenttest.Reply("second"))
	h.submit(msg("s1", "ann", "one"))
	<-entered
	h.submit(msg("s1", "ann", "two"))
	if got := h.model.Calls(); got != 1 {
		t.Fatalf("model calls while the first turn runs = %d, want 1 (the second waits)", got)
	}
	close(gate)
	if d := h.waitDone(); d.Text != "first" {
		t.Fatalf("first done = %q", d.Text)
	}
	if d := h.waitDone(); d.Text != "second" {
		t.Fatalf("second done = %q", d.Text)
	}
	want := "user:one|assistant:first|user:two|assistant:second"
	if got := strings.Join(h.transcript("s1"), "|"); got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
}

func TestInterruptStopsRunningTurn(t *testing.T) {
	gate := make(chan struct{}) // never closed: the first turn only ends by interruption
	entered := make(chan struct{})
	h := start(t, opts{cfg: pipeline.Config{OnBusy: pipeline.OnBusyInterrupt}},
		agenttest.Step{Text: "partial answer that goes on", GateAfter: 2, Gate: gate, Entered: entered},
		agenttest.Reply("answer to two"))
	h.submit(msg("s1", "ann", "one"))
	<-entered
	h.submit(msg("s1", "ann", "two"))
	first := h.waitDone()
	if first.Status != "aborted" || !strings.Contains(first.Text, "(stopped)") {
		t.Fatalf("first = %+v, want aborted and marked stopped", first)
	}
	if second := h.waitDone(); second.Status != "done" || second.Text != "answer to two" {
		t.Fatalf("second = %+v, want the new message answered", second)
	}
}

func TestStopCommand(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{})
	h := start(t, opts{}, agenttest.Step{Text: "long long answer", GateAfter: 1, Gate: gate, Entered: entered})
	h.submit(msg("s1", "ann", "write an essay"))
	<-entered
	began := time.Now()
	h.submit(msg("s1", "ann", "stop"))
	d := h.waitDone()
	if d.Status != "aborted" {
		t.Fatalf("status = %s, want aborted", d.Status)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("stop took %s, want under a second", took)
	}
	if h.model.Calls() != 1 {
		t.Errorf("model calls = %d; the stop message must not start a turn", h.model.Calls())
	}
}

func TestMailboxFullIsBackPressure(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{})
	h := start(t, opts{cfg: pipeline.Config{MailboxSize: 2}}, agenttest.Step{Text: "x", Gate: gate, Entered: entered})
	h.model.SetDefault(agenttest.Reply("y"))
	h.submit(msg("s1", "ann", "1"))
	<-entered
	h.submit(msg("s1", "ann", "2"))
	h.submit(msg("s1", "ann", "3"))
	err := h.p.Submit(context.Background(), msg("s1", "ann", "4"))
	if !errors.Is(err, pipeline.ErrMailboxFull) {
		t.Fatalf("Submit on a full mailbox = %v, want ErrMailboxFull", err)
	}
	// Another session is not affected.
	h.submit(msg("s2", "bob", "hi"))
	close(gate)
	for i := 0; i < 4; i++ {
		h.waitDone()
	}
}

func TestModelDownGivesFallback(t *testing.T) {
	h := start(t, opts{}, agenttest.Fail(fmt.Errorf("connection refused: %w", agent.ErrUnavailable)))
	h.submit(msg("s1", "ann", "hi"))
	d := h.waitDone()
	if d.Status != "error" || !strings.Contains(d.Text, pipeline.DefaultFallback) || !strings.Contains(d.Text, d.Turn) {
		t.Fatalf("done = %+v, want error with the fallback text and the turn id", d)
	}
	tr, _ := h.store.GetTurn(context.Background(), d.Turn)
	if tr.Status != echogate.TurnFailed || !strings.Contains(tr.Error, "connection refused") {
		t.Errorf("turn = %+v, want failed with the error recorded", tr)
	}
}

func TestEphemeralSessionRemoved(t *testing.T) {
	h := start(t, opts{}, agenttest.Reply("bye"))
	ev := msg("once", "ann", "hi")
	ev.Ephemeral = true
	h.submit(ev)
	h.waitDone()
	if _, err := h.store.GetSession(context.Background(), "web:once"); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetSession after an ephemeral turn = %v, want not found", err)
	}
}

type budgetFn func(ctx context.Context, s cost.Scope, req agent.Request) error

func (f budgetFn) Check(ctx context.Context, s cost.Scope, req agent.Request) error {
	return f(ctx, s, req)
}

func TestBudgetStopsBeforeModelCall(t *testing.T) {
	h := start(t, opts{deps: func(d *pipeline.Deps) {
		d.Budget = budgetFn(func(context.Context, cost.Scope, agent.Request) error {
			return fmt.Errorf("your daily budget of $0.01 is used up; it resets at 00:00 UTC: %w", agent.ErrBudget)
		})
	}})
	h.submit(msg("s1", "ann", "hi"))
	d := h.waitDone()
	if d.Status != "aborted" || !strings.Contains(d.Text, "daily budget of $0.01") || h.model.Calls() != 0 {
		t.Fatalf("done = %+v after %d model calls, want aborted with the limit named and no call", d, h.model.Calls())
	}
}

func TestShutdownDrainsRunningTurn(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{})
	h := start(t, opts{}, agenttest.Step{Text: "finished", Gate: gate, Entered: entered})
	h.model.SetDefault(agenttest.Reply("accepted before shutdown"))
	first := msg("s1", "ann", "hi")
	h.submit(first)
	<-entered
	h.cancel()
	if err := h.p.Submit(context.Background(), msg("s2", "bob", "late")); !errors.Is(err, pipeline.ErrShuttingDown) {
		// Run may not have observed the cancellation yet; it must refuse soon after.
		deadline := time.Now().Add(5 * time.Second)
		for !errors.Is(err, pipeline.ErrShuttingDown) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			err = h.p.Submit(context.Background(), msg("s3", "bob", "late"))
		}
		if !errors.Is(err, pipeline.ErrShuttingDown) {
			t.Fatalf("Submit during shutdown = %v, want ErrShuttingDown", err)
		}
	}
	close(gate)
	<-h.done
	for {
		d := h.waitDone()
		if d.EventID != first.ID {
			continue // a "late" message accepted before Run saw the cancellation
		}
		if d.Text != "finished" {
			t.Errorf("in-flight turn ended with %q (%s), want it finished", d.Text, turnErr(h, d.Turn))
		}
		break
	}
}

func TestConcurrentSubmitsManySessions(t *testing.T) {
	h := start(t, opts{})
	h.model.SetDefault(agenttest.Reply("ok"))
	const sessions, per = 50, 4
	var wg sync.WaitGroup
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := h.p.Submit(context.Background(), msg(fmt.Sprintf("c%d", s), "u", fmt.Sprint(i))); err != nil {
					t.Errorf("Submit: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < sessions*per; i++ {
		h.waitDone()
	}
	for s := 0; s < sessions; s++ {
		tr := h.transcript(fmt.Sprintf("c%d", s))
		for i := 0; i < per; i++ {
			if tr[2*i] != "user:"+fmt.Sprint(i) {
				t.Fatalf("session c%d transcript %v: message %d out of order", s, tr, i)
			}
		}
	}
}

func turnErr(h *harness, id string) string {
	tr, _ := h.store.GetTurn(context.Background(), id)
	return tr.Error
}

func TestReplayClosesInterruptedTurn(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "hello?")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
	// The process died mid-turn: a running turn record is left behind.
	store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_dead", Session: ev.SessionKey(), EventKey: ev.DedupeKey(), Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt})
	store.AppendMessages(ctx, ev.SessionKey(), "t_dead", []echogate.Message{{Role: echogate.RoleUser, Content: ev.Text}}, ev.ReceivedAt)
	h := start(t, opts{store: store}, agenttest.Reply("here"))
	if d := h.waitDone(); d.Text != "here" {
		t.Fatalf("replayed answer = %q", d.Text)
	}
	dead, _ := store.GetTurn(ctx, "t_dead")
	if dead.Status != echogate.TurnFailed || !strings.Contains(dead.Error, "interrupted") {
		t.Errorf("dead turn = %+v, want failed and marked interrupted", dead)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hello?|assistant:here"; got != want {
		t.Errorf("transcript = %s, want %s (the user's message once)", got, want)
	}
	if msgs := h.model.Requests()[0].Messages; msgs[len(msgs)-1].Content != "hello?" || msgs[len(msgs)-2].Role != echogate.RoleSystem {
		t.Errorf("the model saw %+v, want the system prompt and the message once", msgs)
	}
}

// A turn that died before it wrote the user's message (it is written behind the model call)
// leaves only its record: the replay closes it and saves the message itself.
func TestReplayOfTurnThatDiedBeforeSavingTheMessage(t *testing.T) {
	store := pipelinetest.NewMemStore()
	ev := msg("s1", "ann", "hello?")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
	store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_dead", Session: ev.SessionKey(), EventKey: ev.DedupeKey(), Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt})
	h := start(t, opts{store: store}, agenttest.Reply("here"))
	if d := h.waitDone(); d.Text != "here" {
		t.Fatalf("replayed answer = %q", d.Text)
	}
	if dead, _ := store.GetTurn(ctx, "t_dead"); dead.Status != echogate.TurnFailed {
		t.Errorf("dead turn = %+v, want failed", dead)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hello?|assistant:here"; got != want {
		t.Errorf("transcript = %s, want %s (the user's message saved by the replay)", got, want)
	}
}

// A turn's usage reaches the ledger before its next model call's budget check, and a turn's
// last call is recorded with the turn's end: every call once.
func TestUsageInLedgerBeforeNextBudgetCheck(t *testing.T) {
	store := pipelinetest.NewMemStore()
	var seen []int
	var mu sync.Mutex
	h := start(t, opts{store: store, tools: []tools.Tool{newTool("lookup", tools.Safe, "found")}, deps: func(d *pipeline.Deps) {
		d.Budget = budgetFn(func(ctx context.Context, s cost.Scope, _ agent.Request) error {
			led, err := store.ListUsage(ctx, echogate.UsageFilter{Turn: s.Turn}, 0)
			if err != nil {
				return err
			}
			mu.Lock()
			seen = append(seen, len(led))
			mu.Unlock()
			return nil
		})
	}}, agenttest.CallTool("lookup", `{}`), agenttest.Reply("done"))
	h.submit(msg("s1", "ann", "look it up"))
	if d := h.waitDone(); d.Status != "done" {
		t.Fatalf("done = %+v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 0 || seen[1] != 1 {
		t.Errorf("ledger entries of the turn seen by the budget checks = %v, want [0 1]", seen)
	}
	led, err := store.ListUsage(context.Background(), echogate.UsageFilter{Session: "web:s1"}, 0)
	if err != nil || len(led) != 2 {
		t.Errorf("ledger after the turn = %d entries, %v; want 2 (one per model call)", len(led), err)
	}
}

// gatedReplayStore holds the start-up replay's query until an event was claimed, as when a
// channel delivers an event at the very moment the pipeline starts.
type gatedReplayStore struct {
	*pipelinetest.MemStore
	claimed chan struct{}
	once    sync.Once
}

func (s *gatedReplayStore) ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error) {
	ok, err := s.MemStore.ClaimEvent(ctx, key, payload, at)
	s.once.Do(func() { close(s.claimed) })
	return ok, err
}

func (s *gatedReplayStore) UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error) {
	select {
	case <-s.claimed:
	case <-time.After(5 * time.Second):
	}
	return s.MemStore.UnfinishedEvents(ctx, before, limit)
}

// An event submitted while the start-up replay looks for unfinished events is this process's
// own: it is answered once, not also replayed. The clock reads T when Run begins and an hour
// later afterwards, so the event (received at T+1s) is older than the replay's "now".
func TestStartupReplaySkipsEventsOfThisRun(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	gs := &gatedReplayStore{MemStore: mem, claimed: make(chan struct{})}
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var calls atomic.Int64
	clock := func() time.Time {
		if calls.Add(1) == 1 {
			return base // Run's start
		}
		return base.Add(time.Hour)
	}
	h := start(t, opts{store: mem, cfg: pipeline.Config{Now: clock}, deps: func(d *pipeline.Deps) { d.Store = gs }},
		agenttest.Reply("once"), agenttest.Reply("twice"))
	ev := msg("s1", "ann", "hi")
	ev.ReceivedAt = base.Add(time.Second)
	h.submit(ev)
	h.waitDone()
	select {
	case d := <-h.rep.Done:
		t.Fatalf("a second turn finished (%+v): the event was replayed while it was being answered", d)
	case <-time.After(300 * time.Millisecond):
	}
	if n := h.model.Calls(); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
}
