package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// startStore lets a test hold or fail the writes that start a turn.
type startStore struct {
	*pipelinetest.MemStore
	createErr error
	updateErr error
	userSaved chan struct{} // closed by the test to let the user's message be written
	// progressErr fails RecordProgress (the question and the first usage of a tool turn).
	progressErr error
}

func (s *startStore) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return beginVia(ctx, s, b)
}

func (s *startStore) CreateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if s.createErr != nil {
		return s.createErr
	}
	return s.MemStore.CreateTurn(ctx, t)
}

func (s *startStore) UpdateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if s.updateErr != nil {
		return s.updateErr
	}
	return s.MemStore.UpdateTurn(ctx, t)
}

func (s *startStore) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	return finishVia(ctx, s, end)
}

func (s *startStore) AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error {
	if s.userSaved != nil && len(msgs) > 0 && msgs[0].Role == echogate.RoleUser {
		select {
		case <-s.userSaved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemStore.AppendMessages(ctx, key, turn, msgs, at)
}

// RecordProgress holds the user's message like AppendMessages, and fails when progressErr is set.
func (s *startStore) RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error {
	if s.progressErr != nil {
		return s.progressErr
	}
	if s.userSaved != nil && len(msgs) > 0 && msgs[0].Role == echogate.RoleUser {
		select {
		case <-s.userSaved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemStore.RecordProgress(ctx, key, turn, msgs, usage, at)
}

// The turn record and the user's message are written behind the model call: when the model
// asks for a tool they are written before it runs, and a failure to write them fails the
// turn: the user gets the fallback text, no answer is saved without its question, and the
// event is not replayed.
func TestTurnStartWriteFailureFailsTheTurn(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	ss := &startStore{MemStore: mem, createErr: errors.New("disk full")}
	h := start(t, opts{store: mem, tools: []tools.Tool{newTool("lookup", tools.Safe, "found")}, deps: func(d *pipeline.Deps) { d.Store = ss }},
		agenttest.CallTool("lookup", `{}`), agenttest.Reply("an answer"))
	ev := msg("s1", "ann", "hi")
	h.submit(ev)
	done := h.waitDone()
	if done.Status != string(echogate.TurnFailed) {
		t.Fatalf("done = %+v, want status failed", done)
	}
	// Whatever was streamed before the failure was known stays, followed by the fallback text.
	posts := h.rep.Posts()
	if len(posts) == 0 || !strings.Contains(posts[len(posts)-1].Text, "(ref t_") {
		t.Errorf("posts = %q, want the last to end with the fallback text and the turn reference", h.rep.Texts())
	}
	if tr := h.transcript("s1"); len(tr) > 1 {
		t.Errorf("transcript = %q, want no answer saved", tr)
	}
	unfinished, err := mem.UnfinishedEvents(context.Background(), time.Now().Add(time.Hour), 0)
	if err != nil || len(unfinished) != 0 {
		t.Errorf("UnfinishedEvents = %v, %v; want the failed event completed (no replay)", unfinished, err)
	}
}

// asyncStarter is a store that queues the turn's record, as SQLite's writer does: the write's
// outcome comes when the test releases it, on a goroutine of the store's.
type asyncStarter struct {
	*startStore
	release chan struct{}
	starts  atomic.Int32
	creates atomic.Int32
}

func (s *asyncStarter) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.Deferred(ctx, b, s, turnstart.DefaultDelay)
}

func (s *asyncStarter) CreateTurn(ctx context.Context, t echogate.TurnRecord) error {
	s.creates.Add(1)
	return s.startStore.CreateTurn(ctx, t)
}

func (s *asyncStarter) StartTurn(ctx context.Context, t echogate.TurnRecord, done func(error)) {
	s.starts.Add(1)
	go func() {
		<-s.release
		done(s.CreateTurn(ctx, t))
	}()
}

// With a store that queues the record (as SQLite's writer does), the write starts there and
// no goroutine waits for it; the turn ends as with CreateTurn, and the record
// is written once.
func TestQueuedTurnRecordIsWrittenOnce(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	ss := &asyncStarter{startStore: &startStore{MemStore: mem}, release: make(chan struct{})}
	close(ss.release)
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = ss }}, agenttest.Reply("an answer"))
	h.submit(msg("s1", "ann", "hi"))
	if done := h.waitDone(); done.Status != string(echogate.TurnDoneSt) {
		t.Fatalf("done = %+v, want done", done)
	}
	if s, c := ss.starts.Load(), ss.creates.Load(); s != 1 || c != 1 {
		t.Errorf("StartTurn %d, CreateTurn %d times; want one StartTurn, whose write is the only CreateTurn", s, c)
	}
	turns, err := mem.ListTurns(context.Background(), "web:s1", 0)
	if err != nil || len(turns) != 1 || turns[0].Status != echogate.TurnDoneSt {
		t.Errorf("turns = %+v, %v; want the one turn, done", turns, err)
	}
}

// A queued record that fails stops the turn when the store reports it, while the model still
// streams: the model call is cancelled, the user gets the fallback text, and nothing is saved.
func TestQueuedTurnRecordFailureStopsTheModel(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	ss := &asyncStarter{startStore: &startStore{MemStore: mem, createErr: errors.New("disk full")}, release: make(chan struct{})}
	entered := make(chan struct{})
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = ss }},
		agenttest.Step{Text: "an answer that never finishes", Gate: make(chan struct{}), GateAfter: 1, Entered: entered})
	h.submit(msg("s1", "ann", "hi"))
	<-entered
	close(ss.release) // the write fails now, mid-stream
	done := h.waitDone()
	if done.Status != string(echogate.TurnFailed) {
		t.Fatalf("done = %+v, want status failed", done)
	}
	if posts := h.rep.Posts(); len(posts) == 0 || !strings.Contains(posts[len(posts)-1].Text, "(ref t_") {
		t.Errorf("posts = %q, want the fallback text with the turn reference last", h.rep.Texts())
	}
	if tr := h.transcript("s1"); len(tr) > 1 {
		t.Errorf("transcript = %q, want no answer saved", tr)
	}
}

// Tools run only once the turn's start writes landed: a tool that reads the transcript (the
// file tools do) finds the message that asked for it.
func TestToolsWaitForTheTurnStart(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	ss := &startStore{MemStore: mem, userSaved: make(chan struct{})}
	seen := make(chan []echogate.StoredMessage, 1)
	reader := &funcTool{spec: tools.Spec{Name: "read_transcript", Description: "reads the transcript", Safety: tools.Safe,
		Parameters: json.RawMessage(`{"type":"object"}`)}}
	reader.fn = func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		hist, err := mem.History(ctx, "web:s1", 0)
		seen <- hist
		return tools.Result{Content: "ok"}, err
	}
	h := start(t, opts{store: mem, tools: []tools.Tool{reader}, deps: func(d *pipeline.Deps) { d.Store = ss }},
		agenttest.CallTool("read_transcript", `{}`), agenttest.Reply("done"))
	h.submit(msg("s1", "ann", "what did I say?"))
	// The model answers at once with the tool call; the tool must not run yet.
	select {
	case <-seen:
		t.Fatal("the tool ran before the user's message was written")
	case <-time.After(100 * time.Millisecond):
	}
	close(ss.userSaved)
	select {
	case hist := <-seen:
		if len(hist) == 0 || hist[0].Message.Content != "what did I say?" {
			t.Errorf("the tool saw transcript %+v, want the user's message first", hist)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool never ran")
	}
	if done := h.waitDone(); done.Status != "done" {
		t.Errorf("done = %+v, want done", done)
	}
}

// In a turn without tools the record is created at the start (behind the model call), and the
// question, the answer and the record's end are written together by the ResponseStage.
func TestTurnWithoutToolsWritesOnceAtTheEnd(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	cs := &countingWrites{MemStore: mem}
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = cs }}, agenttest.Reply("an answer"))
	h.submit(msg("s1", "ann", "hi"))
	if done := h.waitDone(); done.Status != "done" {
		t.Fatalf("done = %+v, want done", done)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hi|assistant:an answer"; got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
	if a, c, u, f := cs.appends.Load(), cs.creates.Load(), cs.updates.Load(), cs.finishes.Load(); a != 1 || c != 1 || u != 1 || f != 1 {
		t.Errorf("AppendMessages %d, CreateTurn %d, UpdateTurn %d, FinishTurn %d times; want the record created at the start, then one FinishTurn with one append of question and answer and the record's update", a, c, u, f)
	}
	turns, err := mem.ListTurns(context.Background(), "web:s1", 0)
	if err != nil || len(turns) != 1 || turns[0].Status != echogate.TurnDoneSt || turns[0].EndedAt.IsZero() {
		t.Errorf("turns = %+v, %v; want one finished turn", turns, err)
	}
}

// A store that fails to record the end of a turn: the answer was delivered, so the turn is not
// failed after the fact, but the transcript is saved and the event completed all the same (no
// second answer on replay).
func TestTurnEndWriteFailureStillCompletesTheEvent(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	ss := &startStore{MemStore: mem, updateErr: errors.New("disk full")}
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = ss }}, agenttest.Reply("an answer"))
	h.submit(msg("s1", "ann", "hi"))
	h.waitDone()
	if texts := h.rep.Texts(); len(texts) != 1 || texts[0] != "an answer" {
		t.Errorf("posts = %q, want the answer", texts)
	}
	unfinished, err := mem.UnfinishedEvents(context.Background(), time.Now().Add(time.Hour), 0)
	if err != nil || len(unfinished) != 0 {
		t.Errorf("UnfinishedEvents = %v, %v; want the event completed", unfinished, err)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hi|assistant:an answer"; got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
}

// countingWrites counts the turn's writes.
type countingWrites struct {
	*pipelinetest.MemStore
	appends, creates, updates, finishes atomic.Int64
	usages, progresses                  atomic.Int64
	progressMsgs, progressUsage         atomic.Int64 // what the RecordProgress calls carried
}

func (s *countingWrites) RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error) {
	s.usages.Add(1)
	return s.MemStore.RecordUsage(ctx, r)
}

func (s *countingWrites) RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error {
	s.progresses.Add(1)
	s.progressMsgs.Add(int64(len(msgs)))
	s.progressUsage.Add(int64(len(usage)))
	return s.MemStore.RecordProgress(ctx, key, turn, msgs, usage, at)
}

// wantOneProgress checks a one-tool turn's writes: one RecordProgress with the question and
// the first model call's usage, and one RecordUsage (the second call's, with the end).
func (s *countingWrites) wantOneProgress(t *testing.T) {
	t.Helper()
	if p, m, u := s.progresses.Load(), s.progressMsgs.Load(), s.progressUsage.Load(); p != 1 || m != 1 || u != 1 {
		t.Errorf("RecordProgress calls = %d carrying %d messages and %d usage entries, want 1 carrying 1 and 1", p, m, u)
	}
	if n := s.usages.Load(); n != 1 {
		t.Errorf("RecordUsage calls = %d, want 1 (the second model call's, with the end)", n)
	}
}

// When the model asks for a tool, the user's message and the usage of that model call are
// written in one RecordProgress (one commit), not an AppendMessages and a RecordUsage; the
// second call's usage and the rest of the transcript come with the turn's end.
func TestToolTurnWritesQuestionAndUsageTogether(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	cw := &countingWrites{MemStore: mem}
	h := start(t, opts{store: mem, tools: []tools.Tool{newTool("lookup", tools.Safe, "found")}, deps: func(d *pipeline.Deps) { d.Store = cw }},
		agenttest.CallTool("lookup", `{}`), agenttest.Reply("an answer"))
	h.submit(msg("s1", "ann", "hi"))
	if done := h.waitDone(); done.Status != string(echogate.TurnDoneSt) {
		t.Fatalf("done = %+v, want done", done)
	}
	cw.wantOneProgress(t)
	if n := cw.finishes.Load(); n != 1 {
		t.Errorf("FinishTurn calls = %d, want 1", n)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hi|assistant→lookup|tool:found|assistant:an answer"; got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
	led, err := mem.ListUsage(context.Background(), echogate.UsageFilter{Session: "web:s1"}, 0)
	if err != nil || len(led) != 2 {
		t.Errorf("ledger = %+v, %v; want the two model calls' entries", led, err)
	}
}

// When the tool the model asked for does not run (here: it does not exist), the question and
// the spend so far are written all the same before the next model call, in one RecordProgress:
// the turn goes on, and its spend must reach the ledger (budgets read it) before it spends more.
func TestToolTurnWritesProgressBeforeTheNextCallWhenNoToolRuns(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	cw := &countingWrites{MemStore: mem}
	second := agenttest.Reply("an answer")
	second.Expect = func(agent.Request) error {
		led, err := mem.ListUsage(context.Background(), echogate.UsageFilter{Session: "web:s1"}, 0)
		if err != nil || len(led) != 1 {
			return fmt.Errorf("before the second model call the ledger holds %+v (%v), want the first call's entry", led, err)
		}
		if hist, err := mem.History(context.Background(), "web:s1", 0); err != nil || len(hist) != 1 || hist[0].Message.Content != "hi" {
			return fmt.Errorf("before the second model call the transcript is %+v (%v), want the question", hist, err)
		}
		return nil
	}
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = cw }},
		agenttest.CallTool("no_such_tool", `{}`), second)
	h.submit(msg("s1", "ann", "hi"))
	if done := h.waitDone(); done.Status != string(echogate.TurnDoneSt) {
		t.Fatalf("done = %+v, want done", done)
	}
	cw.wantOneProgress(t)
	if tr := h.transcript("s1"); len(tr) != 4 || tr[0] != "user:hi" || !strings.HasPrefix(tr[2], "tool:unknown tool") || tr[3] != "assistant:an answer" {
		t.Errorf("transcript = %q, want the question, the call, its error and the answer, each once", tr)
	}
}

// A failed RecordProgress fails the turn like a failed write of the user's message, and the
// usage it carried is not lost: the turn's end records it.
func TestToolTurnProgressFailureKeepsTheUsage(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	ss := &startStore{MemStore: mem, progressErr: errors.New("disk full")}
	h := start(t, opts{store: mem, tools: []tools.Tool{newTool("lookup", tools.Safe, "found")}, deps: func(d *pipeline.Deps) { d.Store = ss }},
		agenttest.CallTool("lookup", `{}`), agenttest.Reply("an answer"))
	h.submit(msg("s1", "ann", "hi"))
	if done := h.waitDone(); done.Status != string(echogate.TurnFailed) {
		t.Fatalf("done = %+v, want status failed", done)
	}
	led, err := mem.ListUsage(context.Background(), echogate.UsageFilter{Session: "web:s1"}, 0)
	if err != nil || len(led) != 1 {
		t.Errorf("ledger = %+v, %v; want the first model call's entry, recorded with the end", led, err)
	}
}

func (s *countingWrites) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	s.finishes.Add(1)
	return finishVia(ctx, s, end)
}

// beginVia implements BeginTurn as the single-process stores do (turnstart.Deferred) with
// st's own methods, so a test store's overrides apply.
func beginVia(ctx context.Context, st pipeline.Store, b turnstart.Begin) *turnstart.Start {
	return turnstart.Deferred(ctx, b, turnstart.Blocking(st), turnstart.DefaultDelay)
}

// finishVia implements FinishTurn with st's own methods, so a test store's overrides apply.
func finishVia(ctx context.Context, st pipeline.Store, end echogate.TurnEnd) error {
	var errs []error
	if len(end.Messages) > 0 {
		errs = append(errs, st.AppendMessages(ctx, end.Session, end.Turn.ID, end.Messages, end.At))
	}
	errs = append(errs, st.UpdateTurn(ctx, end.Turn))
	for i, r := range end.Usage {
		id, err := st.RecordUsage(ctx, r)
		end.Usage[i].ID = id
		errs = append(errs, err)
	}
	if end.EventKey != "" {
		errs = append(errs, st.CompleteEvent(ctx, end.EventKey, end.At))
	}
	return errors.Join(errs...)
}

func (s *countingWrites) AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error {
	s.appends.Add(1)
	return s.MemStore.AppendMessages(ctx, key, turn, msgs, at)
}

func (s *countingWrites) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return beginVia(ctx, s, b)
}

func (s *countingWrites) CreateTurn(ctx context.Context, t echogate.TurnRecord) error {
	s.creates.Add(1)
	return s.MemStore.CreateTurn(ctx, t)
}

func (s *countingWrites) UpdateTurn(ctx context.Context, t echogate.TurnRecord) error {
	s.updates.Add(1)
	return s.MemStore.UpdateTurn(ctx, t)
}
