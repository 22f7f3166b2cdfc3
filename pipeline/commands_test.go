package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
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

// Every command ends its exchange: an observing channel (web, terminal) sees done with the
// answer, and no model is called.
func TestCommandsEndTheirExchange(t *testing.T) {
	for _, tt := range []struct {
		text, want string
	}{
		{"/usage", "Usage tracking is not configured"},
		{"!usage", "Usage tracking is not configured"},
		{"/model", "choosing a model per conversation is not configured"},
		{"/help", "Commands:"},
		{"!HELP", "Commands:"},
		{"/stop", "Nothing is running"},
		{"/new", "Starting over"},
	} {
		h := start(t, opts{})
		h.submit(msg("s1", "ann", tt.text))
		d := h.waitDone()
		if d.Status != "done" || !strings.Contains(d.Text, tt.want) {
			t.Errorf("%s: done = %+v, want status done and text containing %q", tt.text, d, tt.want)
		}
		if n := h.model.Calls(); n != 0 {
			t.Errorf("%s: model called %d times, want 0", tt.text, n)
		}
		h.stop()
	}
}

// Words that only start like a command are messages for the model.
func TestParseCommand(t *testing.T) {
	for text, want := range map[string]bool{
		"/usage": true, "!usage": true, " /HELP ": true, "/model gpt-4o": true, "!stop": true,
		"/new york weather": false, "!help me write a poem": false, "usage": false, "/unknown": false, "!": false,
	} {
		h := start(t, opts{}, agenttest.Reply("model answer"))
		h.submit(msg("s1", "ann", text))
		d := h.waitDone()
		if got := d.Text != "model answer"; got != want {
			t.Errorf("%q answered as a command = %v, want %v (answer %q)", text, got, want, d.Text)
		}
		h.stop()
	}
}

// A command that came as an interaction (Slack slash command, Discord application command) is
// answered through it: the notice carries the interaction, so the channel answers privately.
func TestInteractionCommandAnsweredPrivately(t *testing.T) {
	sent := make(chan echogate.Outbound, 16)
	h := start(t, opts{deps: func(d *pipeline.Deps) {
		d.Repliers[echogate.PlatformWeb] = signalReplier{StreamingReplier: d.Repliers[echogate.PlatformWeb].(pipelinetest.StreamingReplier), sent: sent}
	}})
	ev := msg("s1", "ann", "/help")
	ev.Interaction = "token-1"
	h.submit(ev)
	select {
	case out := <-sent:
		if out.Interaction != "token-1" || !strings.Contains(out.Text, "Commands:") {
			t.Errorf("answer = %+v, want the help sent through interaction token-1", out)
		}
	case <-time.After(10 * time.Second): // a bound for a hang, not a measurement
		t.Fatal("the command was not answered")
	}
	if n := len(h.rep.Events()); n != 0 {
		t.Errorf("turn events = %d, want none: the answer goes through the interaction", n)
	}
}

// /new forgets the conversation: the next turn's model request has no earlier messages.
func TestNewCommandForgets(t *testing.T) {
	h := start(t, opts{}, agenttest.Reply("one"), agenttest.Reply("two"))
	h.submit(msg("s1", "ann", "remember the word kiwi"))
	h.waitDone()
	h.submit(msg("s1", "ann", "/new"))
	h.waitDone()
	h.submit(msg("s1", "ann", "what was the word?"))
	h.waitDone()
	reqs := h.model.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		if strings.Contains(m.Content, "kiwi") {
			t.Errorf("after /new the model still sees %q", m.Content)
		}
	}
}

// A command while a turn is paused leaves the pause alone.
func TestCommandKeepsPause(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "deleted")
	h := start(t, opts{tools: []tools.Tool{del}}, agenttest.CallTool("delete_file", `{}`), agenttest.Reply("deleted it"))
	h.submit(msg("s1", "ann", "delete"))
	h.waitDone()
	prompt := promptOf(t, h).Ref
	h.submit(msg("s1", "ann", "!help"))
	if d := h.waitDone(); !strings.Contains(d.Text, "Commands:") {
		t.Fatalf("help while paused = %+v", d)
	}
	h.submit(reaction("s1", "ann", echogate.ReactionApprove, prompt))
	if d := h.waitDone(); d.Text != "deleted it" || del.calls.Load() != 1 {
		t.Errorf("after help, approval = %+v (tool calls %d), want the approved call to run", d, del.calls.Load())
	}
}

// activityReplier records what a channel with an activity view is shown.
type activityReplier struct {
	pipelinetest.StreamingReplier
	mu    sync.Mutex
	shown []echogate.Activity
	ended int
}

type activityView struct{ r *activityReplier }

func (r *activityReplier) StartActivity(context.Context, echogate.ConversationRef, echogate.MessageRef) echogate.ActivityView {
	return activityView{r}
}
func (v activityView) Show(a echogate.Activity) {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	v.r.shown = append(v.r.shown, a)
}
func (v activityView) End() {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	v.r.ended++
}

// The activity names the running tools and is cleared exactly once when the turn ends: done,
// failed or stopped.
func TestActivitySetAndCleared(t *testing.T) {
	for name, steps := range map[string][]agenttest.Step{
		"done":   {agenttest.CallTool("lookup", `{}`), agenttest.Reply("found it")},
		"failed": {agenttest.CallTool("lookup", `{}`), agenttest.Fail(errors.New("model exploded"))},
	} {
		t.Run(name, func(t *testing.T) {
			ar := &activityReplier{}
			look := newTool("lookup", tools.Safe, "data")
			h := start(t, opts{tools: []tools.Tool{look}, deps: func(d *pipeline.Deps) {
				ar.StreamingReplier = pipelinetest.StreamingReplier{Replier: pipelinetest.NewReplier(echogate.PlatformWeb)}
				d.Repliers[echogate.PlatformWeb] = ar
			}}, steps...)
			h.rep = ar.Replier
			h.submit(msg("s1", "ann", "look it up"))
			h.waitDone()
			h.stop() // the turn's goroutine has returned: its activity ended
			ar.mu.Lock()
			defer ar.mu.Unlock()
			var statuses []string
			for _, a := range ar.shown {
				statuses = append(statuses, a.Status)
			}
			joined := strings.Join(statuses, "|")
			if !strings.Contains(joined, "is thinking…") || !strings.Contains(joined, "is running lookup…") {
				t.Errorf("activity shown = %q, want thinking and the running tool named", joined)
			}
			last := ar.shown[len(ar.shown)-1]
			if len(last.Tasks) != 1 || last.Tasks[0].Title != "lookup" || last.Tasks[0].Status != echogate.TaskDone {
				t.Errorf("last activity tasks = %+v, want the lookup call, done", last.Tasks)
			}
			if ar.ended != 1 {
				t.Errorf("activity ended %d times, want 1", ar.ended)
			}
		})
	}
}

// Thread context reaches the model with the authors' names, once: the next turn reads it from
// the transcript, not from the event again.
func TestThreadContextOnce(t *testing.T) {
	h := start(t, opts{}, agenttest.Reply("summary"), agenttest.Reply("again"))
	ev := msg("s1", "ann", "summarize this thread")
	ev.Actor.Name = "Ann"
	ev.ThreadContext = []echogate.ThreadMessage{{Author: "Bob", Text: "the deploy failed"}, {Author: "Cy", Text: "rolling back"}}
	h.submit(ev)
	h.waitDone()
	h.submit(msg("s1", "ann", "and now?"))
	h.waitDone()
	reqs := h.model.Requests()
	first := lastUser(reqs[0].Messages)
	for _, want := range []string{"Bob: the deploy failed", "Cy: rolling back", "Ann: summarize this thread"} {
		if !strings.Contains(first, want) {
			t.Errorf("first request's user message = %q, want it to contain %q", first, want)
		}
	}
	n := 0
	for _, m := range reqs[1].Messages {
		n += strings.Count(m.Content, "the deploy failed")
	}
	if n != 1 {
		t.Errorf("second request carries the thread context %d times, want once (from the transcript)", n)
	}
}

func lastUser(msgs []echogate.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == echogate.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// signalReplier tells every Send on sent.
type signalReplier struct {
	pipelinetest.StreamingReplier
	sent chan echogate.Outbound
}

func (r signalReplier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	ref, err := r.StreamingReplier.Send(ctx, out)
	r.sent <- out
	return ref, err
}

// A private command (an interaction) is answered while the conversation's turn still runs.
func TestInteractionCommandNotHeldUpByATurn(t *testing.T) {
	release := make(chan struct{})
	slow := &funcTool{spec: tools.Spec{Name: "slow", Description: "slow", Safety: tools.Safe},
		fn: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return tools.Result{Content: "ok"}, nil
		}}
	sent := make(chan echogate.Outbound, 16)
	h := start(t, opts{tools: []tools.Tool{slow}, deps: func(d *pipeline.Deps) {
		d.Repliers[echogate.PlatformWeb] = signalReplier{StreamingReplier: d.Repliers[echogate.PlatformWeb].(pipelinetest.StreamingReplier), sent: sent}
	}}, agenttest.CallTool("slow", `{}`), agenttest.Reply("slow done"))
	h.submit(msg("s1", "ann", "run the slow thing"))
	ev := msg("s1", "ann", "/usage")
	ev.Interaction = "token-2"
	h.submit(ev)
	// The turn is blocked in its tool until release: the command's answer is the first post.
	select {
	case out := <-sent:
		if out.Interaction != "token-2" {
			t.Errorf("first post = %+v, want the command's private answer", out)
		}
	case d := <-h.rep.Done:
		t.Fatalf("turn finished (%+v) before the command was answered", d)
	case <-time.After(10 * time.Second): // a bound for a hang, not a measurement
		close(release)
		t.Fatal("the command waited behind the running turn")
	}
	close(release)
	if d := h.waitDone(); d.Text != "slow done" {
		t.Errorf("turn = %+v", d)
	}
}
