package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// lockedBuffer is a log sink safe for the turn's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the JSON log records whose message is msg.
func (b *lockedBuffer) records(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(b.buf.String(), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestRefusedTransitionFailsTheTurn drives real turns (scripted model, streaming web replier,
// memory store) into a transition the lifecycle refuses, injected as a stage bug would make it:
// a stage that moves the turn to Done before the answer was posted, a move back to Idle in
// the middle of the model's stream, a move back to Processing while the answer is posted, and
// a pause the turn cannot enter (no pause of the failed turn may be saved). The refusal must fail the turn: the record says failed,
// the user gets the fallback text, no tool runs after it, the refusal is counted and logged
// with the turn id and both states. (Today it is only logged and the turn records done.)
func TestRefusedTransitionFailsTheTurn(t *testing.T) {
	for name, tt := range map[string]struct {
		steps    []agenttest.Step
		inject   func(p *Pipeline)
		from, to State
	}{
		"a stage moves to done before the response": {
			steps: []agenttest.Step{agenttest.Reply("the answer")},
			inject: func(p *Pipeline) {
				real := p.stages.Inference
				p.stages.Inference = StageFunc(func(ctx context.Context, tu *Turn) error {
					err := real.Process(ctx, tu)
					tu.enter(StateDone) // a bug: Done is entered from Response only
					return err
				})
			},
			from: StateStreaming, to: StateDone,
		},
		"back to idle in the middle of the stream": {
			steps: []agenttest.Step{{Text: "let me look", ToolCalls: []echogate.ToolCall{{ID: "c1", Name: "lookup", Arguments: "{}"}}},
				agenttest.Reply("found it")},
			inject: func(p *Pipeline) {
				real := p.stages.Context
				p.stages.Context = StageFunc(func(ctx context.Context, tu *Turn) error {
					tu.life.onEnter = func(_, to State) {
						if to == StateStreaming {
							tu.enter(StateIdle) // a bug: no turn goes back to Idle
						}
					}
					return real.Process(ctx, tu)
				})
			},
			from: StateStreaming, to: StateIdle,
		},
		"refused while the answer is posted": {
			steps: []agenttest.Step{agenttest.Reply("the answer")},
			inject: func(p *Pipeline) {
				real := p.stages.Response
				p.stages.Response = StageFunc(func(ctx context.Context, tu *Turn) error {
					tu.life.onEnter = func(_, to State) {
						if to == StateResponse {
							tu.enter(StateProcessing) // a bug: the answer is being posted
						}
					}
					return real.Process(ctx, tu)
				})
			},
			from: StateResponse, to: StateProcessing,
		},
		"refused as the turn pauses": {
			steps: []agenttest.Step{agenttest.CallTool("send", `{}`)},
			inject: func(p *Pipeline) {
				real := p.stages.Response
				p.stages.Response = StageFunc(func(ctx context.Context, tu *Turn) error {
					tu.enter(StateProcessing) // a bug moves the paused turn on to Response…
					tu.enter(StateResponse)
					return real.Process(ctx, tu) // …so entering WaitingApproval is refused
				})
			},
			from: StateResponse, to: StateWaitingApproval,
		},
	} {
		t.Run(name, func(t *testing.T) {
			expectRefusals(t, 1)
			rep := pipelinetest.NewReplier(echogate.PlatformWeb)
			store := pipelinetest.NewMemStore()
			lookup, send := &countingTool{name: "lookup", safety: tools.Safe}, &countingTool{name: "send", safety: tools.Sensitive}
			reg, err := tools.NewRegistry(lookup, send)
			if err != nil {
				t.Fatal(err)
			}
			logs := &lockedBuffer{}
			m := metrics.New()
			p, err := New(Config{}, Deps{Store: store, Model: agenttest.NewScriptedModel(tt.steps...), Tools: reg, Metrics: m,
				Log:      slog.New(slog.NewJSONHandler(logs, nil)),
				Repliers: map[string]Replier{echogate.PlatformWeb: pipelinetest.StreamingReplier{Replier: rep}}})
			if err != nil {
				t.Fatal(err)
			}
			tt.inject(p)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = p.Run(ctx) }()
			defer func() { cancel(); <-done }()
			<-p.Started()

			ev := echogate.InboundEvent{ID: "ev1", Kind: echogate.KindDirect, Text: "hi", Actor: echogate.Actor{ID: "u"},
				Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "s1", DM: true}}
			if err := p.Submit(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			var end echogate.TurnEvent
			select {
			case end = <-rep.Done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the turn did not finish within 10s; posts %q", rep.Texts())
			}

			if end.Status != string(echogate.TurnFailed) {
				t.Errorf("done event status = %q, want %q (a refused transition fails the turn)", end.Status, echogate.TurnFailed)
			}
			turns, err := store.ListTurns(context.Background(), ev.SessionKey(), 10)
			if err != nil || len(turns) != 1 {
				t.Fatalf("ListTurns = %d turns, %v; want 1", len(turns), err)
			}
			if tr := turns[0]; tr.Status != echogate.TurnFailed || !strings.Contains(tr.Error, "illegal turn transition") {
				t.Errorf("turn record = status %q, error %q; want %q naming the illegal transition", tr.Status, tr.Error, echogate.TurnFailed)
			}
			texts := strings.Join(rep.Texts(), "\n")
			if !strings.Contains(texts, DefaultFallback) || !strings.Contains(texts, "(ref "+turns[0].ID+")") {
				t.Errorf("posts = %q, want the fallback text with the turn's reference", texts)
			}
			if n := lookup.calls() + send.calls(); n != 0 {
				t.Errorf("tools ran %d times after the refused transition, want 0", n)
			}
			if pend, err := store.GetPending(context.Background(), ev.SessionKey()); err == nil {
				t.Errorf("a pause of the failed turn was saved (turn %s, tool %s), want none", pend.Turn, pend.Tool)
			}
			labels := map[string]string{"from": tt.from.String(), "to": tt.to.String()}
			if got := sample(t, m, "echogate_turn_refused_transitions_total", labels).GetCounter().GetValue(); got != 1 {
				t.Errorf("echogate_turn_refused_transitions_total%v = %v, want 1", labels, got)
			}
			if got := sample(t, m, "echogate_degraded_total", map[string]string{}).GetCounter().GetValue(); got != 1 {
				t.Errorf("echogate_degraded_total = %v, want 1 (the user got the fallback)", got)
			}
			recs := logs.records("pipeline: refused turn transition; the turn fails")
			if len(recs) != 1 || recs[0]["turn"] != turns[0].ID || recs[0]["from"] != tt.from.String() || recs[0]["to"] != tt.to.String() {
				t.Errorf("refusal log records = %v; want one with turn %s, from %s, to %s", recs, turns[0].ID, tt.from, tt.to)
			}
		})
	}
}

// countingTool is a tool that counts its calls.
type countingTool struct {
	name   string
	safety tools.Safety
	mu     sync.Mutex
	n      int
}

func (c *countingTool) Spec() tools.Spec {
	return tools.Spec{Name: c.name, Description: c.name, Safety: c.safety}
}

func (c *countingTool) Call(context.Context, json.RawMessage) (tools.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return tools.Result{Content: "found"}, nil
}

func (c *countingTool) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
