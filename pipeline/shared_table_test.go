package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/access"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// tableConv is the shared conversation of TestWhoMayDoWhat: a Slack thread several people
// reply in (access rules apply to Slack, not to the web chat).
var tableConv = echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: "T1", Channel: "C1", Thread: "1.0"}

const tableKey = echogate.SessionKey("slack:C1:1.0")

// tableEnv is one fresh gateway for one cell of the table.
type tableEnv struct {
	t       *testing.T
	h       *harness
	rep     *pipelinetest.Replier // the Slack replier: every answer and finished turn
	lookup  *funcTool
	gate    chan struct{} // holds UR's running turn
	entered chan struct{}
	seen    []echogate.TurnEvent
}

func newTableEnv(t *testing.T, onBusy pipeline.OnBusy) *tableEnv {
	e := &tableEnv{t: t, rep: pipelinetest.NewReplier(echogate.PlatformSlack), lookup: newTool("lookup", tools.Sensitive, "found"),
		gate: make(chan struct{}), entered: make(chan struct{})}
	rules := access.Rules{Users: []string{"slack:UA", "slack:UR", "slack:UB", "slack:BOSS"}, DMs: true}
	e.h = start(t, opts{tools: []tools.Tool{e.lookup},
		cfg: pipeline.Config{OnBusy: onBusy, Approvers: []string{"slack:BOSS"}, Access: &rules},
		deps: func(d *pipeline.Deps) {
			d.Repliers[echogate.PlatformSlack] = pipelinetest.StreamingReplier{Replier: e.rep}
			d.Models = modelList{"small", "big"}
		}})
	e.h.model.SetDefault(agenttest.Reply("ok"))
	return e
}

func (e *tableEnv) ev(user, text string) echogate.InboundEvent {
	return echogate.InboundEvent{ID: fmt.Sprintf("tbl%d", evSeq.Add(1)), Kind: echogate.KindMention, Conversation: tableConv,
		Actor: echogate.Actor{ID: user, Name: user}, Text: text,
		Message: echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C1", ID: fmt.Sprint(evSeq.Load())}}
}

func (e *tableEnv) submit(ev echogate.InboundEvent) {
	e.t.Helper()
	if err := e.h.p.Submit(context.Background(), ev); err != nil {
		e.t.Fatalf("Submit(%s) = %v", ev.ID, err)
	}
}

// until collects finished turns and command answers until ev's.
func (e *tableEnv) until(ev echogate.InboundEvent) {
	e.t.Helper()
	for {
		select {
		case d := <-e.rep.Done:
			e.seen = append(e.seen, d)
			if d.EventID == ev.ID {
				return
			}
		case <-time.After(10 * time.Second): // a bound for a hang, not a measurement
			e.t.Fatalf("no answer to %s; seen %+v", ev.ID, e.seen)
		}
	}
}

// do submits ev and waits for it to be answered.
func (e *tableEnv) do(user, text string) echogate.TurnEvent {
	ev := e.ev(user, text)
	e.submit(ev)
	e.until(ev)
	return e.seen[len(e.seen)-1]
}

// marker makes sure everything submitted before has been handled: the approver's !help queues
// behind it in the session's mailbox.
func (e *tableEnv) marker() { e.do("BOSS", "!help") }

// answerTo is the answer to ev among the seen ones.
func (e *tableEnv) answerTo(ev echogate.InboundEvent) (echogate.TurnEvent, bool) {
	for _, d := range e.seen {
		if d.EventID == ev.ID {
			return d, true
		}
	}
	return echogate.TurnEvent{}, false
}

// States the conversation is in when the action comes. UA started it every time.
func (e *tableEnv) idle() {
	e.h.model.Append(agenttest.Reply("hi UA"), agenttest.Reply("hi UR"))
	e.do("UA", "hi")
	e.do("UR", "hello")
}

func (e *tableEnv) running() echogate.InboundEvent {
	e.h.model.Append(agenttest.Reply("hi UA"), agenttest.Step{Text: "UR's long answer that goes on", GateAfter: 2, Gate: e.gate, Entered: e.entered})
	e.do("UA", "hi")
	ev := e.ev("UR", "write an essay")
	e.submit(ev)
	<-e.entered
	return ev
}

func (e *tableEnv) paused() echogate.MessageRef {
	e.h.model.Append(agenttest.Reply("hi UA"), agenttest.CallTool("lookup", `{"q":"x"}`))
	e.do("UA", "hi")
	if d := e.do("UR", "look it up"); d.Status != "paused" {
		e.t.Fatalf("UR's turn = %+v, want paused", d)
	}
	for _, p := range e.rep.Posts() {
		if p.Out.Kind == echogate.OutApprovalPrompt {
			return p.Ref
		}
	}
	e.t.Fatal("no approval prompt")
	return echogate.MessageRef{}
}

func (e *tableEnv) transcriptLen() int {
	h, err := e.h.store.History(context.Background(), tableKey, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(h)
}

// refusedAnswer reports whether ev was answered with who may act instead.
func (e *tableEnv) refusedAnswer(ev echogate.InboundEvent) bool {
	d, ok := e.answerTo(ev)
	return ok && (strings.Contains(d.Text, "Only ") || strings.Contains(d.Text, "can't be cleared"))
}

// Actions: each drives one through the real Submit path and names what happened.
var tableActions = map[string]func(e *tableEnv, user string) string{
	"message": func(e *tableEnv, user string) string {
		e.idle()
		calls := e.h.model.Calls()
		ev := e.ev(user, "what is new?")
		e.submit(ev)
		e.marker()
		if d, ok := e.answerTo(ev); ok && d.Status == "done" && e.h.model.Calls() > calls {
			return "turn"
		}
		return "ignored"
	},
	"stop": func(e *tableEnv, user string) string { return e.stopLike(user, "stop", "") },
	"interrupt": func(e *tableEnv, user string) string {
		ur := e.running()
		ev := e.ev(user, "hello there")
		e.submit(ev) // an interrupt happens in Submit
		close(e.gate)
		e.until(ur) // before the marker: the approver's message would interrupt it too
		e.marker()
		d, _ := e.answerTo(ur)
		_, answered := e.answerTo(ev)
		switch {
		case d.Status == "aborted":
			return "stopped"
		case answered:
			return "queued"
		}
		return "ignored"
	},
	"!new":  func(e *tableEnv, user string) string { return e.newLike(user, "") },
	"slash": func(e *tableEnv, user string) string { return e.newLike(user, "response-url") },
	"!model": func(e *tableEnv, user string) string {
		e.paused()
		ev := e.ev(user, "!model big")
		e.submit(ev)
		if d := e.do("BOSS", "!model"); strings.Contains(d.Text, "Model for this conversation: big") {
			return "model"
		}
		if e.refusedAnswer(ev) {
			return "refused"
		}
		return "ignored"
	},
	"✅":      func(e *tableEnv, user string) string { return e.decide(user, echogate.ReactionApprove, false) },
	"🔁":      func(e *tableEnv, user string) string { return e.decide(user, echogate.ReactionApproveSession, false) },
	"❌":      func(e *tableEnv, user string) string { return e.decide(user, echogate.ReactionDeny, false) },
	"button": func(e *tableEnv, user string) string { return e.decide(user, echogate.ReactionApprove, true) },
}

// stopLike: user's stop while UR's turn runs.
func (e *tableEnv) stopLike(user, text, interaction string) string {
	ur := e.running()
	ev := e.ev(user, text)
	ev.Interaction = interaction
	e.submit(ev) // a stop of a running turn is decided in Submit
	close(e.gate)
	e.marker()
	if d, _ := e.answerTo(ur); d.Status == "aborted" {
		return "stopped"
	}
	if e.refusedAnswer(ev) {
		return "refused"
	}
	return "ignored"
}

// newLike: user's !new (or /echogate new, through an interaction) while UR's call waits.
func (e *tableEnv) newLike(user, interaction string) string {
	e.paused()
	ev := e.ev(user, "!new")
	if interaction != "" {
		ev.Text, ev.Interaction = "/new", interaction
	}
	e.submit(ev)
	e.marker()
	if e.transcriptLen() == 0 {
		return "reset"
	}
	if interaction != "" {
		for _, p := range e.rep.Posts() {
			if p.Out.Interaction == interaction && strings.Contains(p.Text, "can't be cleared") {
				return "refused"
			}
		}
		return "ignored"
	}
	if e.refusedAnswer(ev) {
		return "refused"
	}
	return "ignored"
}

// decide: user's reaction (or button) on the prompt of UR's pending call.
func (e *tableEnv) decide(user, emoji string, button bool) string {
	prompt := e.paused()
	ev := e.ev(user, "")
	ev.Kind, ev.Reaction, ev.Target = echogate.KindReaction, emoji, prompt
	if button {
		ev.ID = "button:" + ev.ID
	}
	e.submit(ev)
	e.marker()
	grants, _ := e.h.store.Grants(context.Background(), tableKey, "slack:UR")
	hist, _ := e.h.store.History(context.Background(), tableKey, 0)
	switch {
	case e.lookup.calls.Load() == 1 && grants["lookup"] != "":
		return "ran+grant"
	case e.lookup.calls.Load() == 1:
		return "ran"
	}
	for _, m := range hist {
		if m.Message.Role == echogate.RoleTool && strings.Contains(m.Message.Content, "denied it") {
			return "denied"
		}
	}
	return "ignored"
}

// TestWhoMayDoWhat is issue 36's table of who may do what in a shared conversation, through
// the dispatcher's real paths: UA started the thread, UR's turn runs (stop, interrupt) or waits
// for approval of a sensitive call (!new, !model, ✅ 🔁 ❌, a button, a slash command), UB only
// takes part, BOSS is an approver, UX is refused by the access rules (and gets nothing).
func TestWhoMayDoWhat(t *testing.T) {
	roles := []string{"UA", "UR", "UB", "BOSS", "UX"}
	names := []string{"starter", "requester", "other participant", "approver", "refused user"}
	table := []struct {
		action string
		want   string // per role, in the order of roles
	}{
		{"message", "turn turn turn turn ignored"},
		{"stop", "stopped stopped refused stopped ignored"},
		{"interrupt", "stopped stopped queued stopped ignored"},
		{"!new", "reset reset refused reset ignored"},
		{"!model", "model model refused model ignored"},
		{"✅", "ignored ran ignored ran ignored"},
		{"🔁", "ignored ran+grant ignored ran+grant ignored"},
		{"❌", "ignored denied ignored denied ignored"},
		{"button", "ignored ran ignored ran ignored"},
		{"slash", "reset reset refused reset ignored"},
	}
	for _, row := range table {
		want := strings.Fields(row.want)
		for i, user := range roles {
			t.Run(row.action+"/"+names[i], func(t *testing.T) {
				onBusy := pipeline.OnBusyQueue
				if row.action == "interrupt" {
					onBusy = pipeline.OnBusyInterrupt
				}
				e := newTableEnv(t, onBusy)
				if got := tableActions[row.action](e, user); got != want[i] {
					t.Errorf("%s by the %s (%s) = %s, want %s", row.action, names[i], user, got, want[i])
				}
			})
		}
	}
}
