package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// chatReplier records posts like pipelinetest.Replier and signals every change on changed (the
// tests wait on it, never on a clock). Without observe it has no turn observer, like Slack's and
// Discord's repliers: the question is posted with its buttons; with it, like the web chat's.
type chatReplier struct {
	*pipelinetest.Replier
	changed chan struct{}
	observe bool
}

func (c chatReplier) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c chatReplier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	defer c.poke()
	return c.Replier.Send(ctx, out)
}

func (c chatReplier) Edit(ctx context.Context, ref echogate.MessageRef, text string) error {
	defer c.poke()
	return c.Replier.Edit(ctx, ref, text)
}

func (c chatReplier) ObserveTurn(ev echogate.TurnEvent) {
	c.Replier.ObserveTurn(ev)
	c.poke()
}

func (c chatReplier) Caps() pipeline.Caps {
	caps := pipeline.Caps{Editor: c}
	if c.observe {
		caps.Observer = c
	}
	return caps
}

// askHarness runs a pipeline whose tool "ask" puts q (its caller filled in) to the person and
// hands the reply to replies; the model calls it, then answers "done". cancel, when the test
// sends on it, ends the question's wait as the server's timeout would.
type askHarness struct {
	h       *harness
	chat    chatReplier
	replies chan pipeline.Reply
	cancel  chan struct{}
}

const askSchema = `{"type":"object","properties":{"size":{"type":"string","enum":["small","large"]}},"required":["size"]}`

func startAsk(t *testing.T, platform string, q pipeline.Question) *askHarness {
	t.Helper()
	a := &askHarness{chat: chatReplier{Replier: pipelinetest.NewReplier(platform), changed: make(chan struct{}, 1), observe: platform == echogate.PlatformWeb},
		replies: make(chan pipeline.Reply, 8), cancel: make(chan struct{}, 1)}
	tool := &funcTool{spec: tools.Spec{Name: "ask", Description: "asks", Safety: tools.Safe}}
	tool.fn = func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-a.cancel:
				cancel()
			case <-ctx.Done():
			}
		}()
		q := q
		q.Caller, _ = tools.CallerFrom(ctx)
		r, err := a.h.p.Elicit(ctx, q)
		if err != nil {
			r = pipeline.Reply{Action: "error: " + err.Error()}
		}
		a.replies <- r
		b, _ := json.Marshal(r)
		return tools.Result{Content: string(b)}, nil
	}
	a.h = start(t, opts{tools: []tools.Tool{tool}, cfg: pipeline.Config{Approvers: []string{platform + ":UBOSS"}},
		deps: func(d *pipeline.Deps) { d.Repliers[platform] = a.chat }})
	a.h.model.SetDefault(agenttest.Reply("done"))
	return a
}

var askSeq int

func chatEvent(platform, user, text string) echogate.InboundEvent {
	askSeq++
	return echogate.InboundEvent{ID: fmt.Sprintf("q%d", askSeq), Kind: echogate.KindMention, Text: text,
		Conversation: echogate.ConversationRef{Platform: platform, Channel: "C1", Thread: "100.1"}, Actor: echogate.Actor{ID: user, Name: user}}
}

func press(platform, user, value string, prompt echogate.MessageRef) echogate.InboundEvent {
	ev := chatEvent(platform, user, "")
	ev.Kind, ev.Reaction, ev.Target = echogate.KindReaction, value, prompt
	return ev
}

// waitPost waits until the chat replier holds a post matching ok.
func (a *askHarness) waitPost(t *testing.T, what string, ok func(pipelinetest.Post) bool) pipelinetest.Post {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		for _, p := range a.chat.Posts() {
			if ok(p) {
				return p
			}
		}
		select {
		case <-a.chat.changed:
		case <-limit:
			t.Fatalf("no post %s; posts: %+v", what, a.chat.Posts())
		}
	}
}

// waitEvent waits until the chat replier observed a turn event matching ok.
func (a *askHarness) waitEvent(t *testing.T, what string, ok func(echogate.TurnEvent) bool) echogate.TurnEvent {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		for _, ev := range a.chat.Events() {
			if ok(ev) {
				return ev
			}
		}
		select {
		case <-a.chat.changed:
		case <-limit:
			t.Fatalf("no turn event %s; events: %+v", what, a.chat.Events())
		}
	}
}

func (a *askHarness) reply(t *testing.T) pipeline.Reply {
	t.Helper()
	select {
	case r := <-a.replies:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("the tool got no reply; posts: %+v", a.chat.Posts())
		return pipeline.Reply{}
	}
}

func (a *askHarness) waitDone(t *testing.T) echogate.TurnEvent {
	t.Helper()
	select {
	case ev := <-a.chat.Done:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no turn finished; events: %+v", a.chat.Events())
		return echogate.TurnEvent{}
	}
}

func isQuestion(p pipelinetest.Post) bool { return len(p.Out.Choices) > 0 }

// TestElicitationAnsweredByRequesterOrApprover: the question is posted in the conversation with
// a button per option and Decline; a stranger's press is refused with a note only they see and
// does not answer; the requester's press, an approver's press, or the requester's typed answer
// reaches the tool; a typed answer that fits no option is explained and the question waits.
func TestElicitationAnsweredByRequesterOrApprover(t *testing.T) {
	for name, tc := range map[string]struct {
		answer func(prompt echogate.MessageRef) []echogate.InboundEvent
		want   string
	}{
		"requester presses large": {func(p echogate.MessageRef) []echogate.InboundEvent {
			return []echogate.InboundEvent{press("slack", "UANN", "elicit:v1", p)}
		}, `{"Action":"accept","Content":{"size":"large"}}`},
		"approver declines": {func(p echogate.MessageRef) []echogate.InboundEvent {
			return []echogate.InboundEvent{press("slack", "UBOSS", "elicit:decline", p)}
		}, `{"Action":"decline","Content":null}`},
		"requester types after a bad answer": {func(echogate.MessageRef) []echogate.InboundEvent {
			return []echogate.InboundEvent{chatEvent("slack", "UANN", "medium"), chatEvent("slack", "UANN", "Small")}
		}, `{"Action":"accept","Content":{"size":"small"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			a := startAsk(t, "slack", pipeline.Question{From: "MCP server shop", Message: "Which size?", Schema: json.RawMessage(askSchema)})
			a.h.model.Append(agenttest.CallTool("ask", `{}`))
			a.h.submit(chatEvent("slack", "UANN", "order a shirt"))
			q := a.waitPost(t, "with the question's buttons", isQuestion)
			var labels []string
			for _, c := range q.Out.Choices {
				labels = append(labels, c.Label)
			}
			if got := strings.Join(labels, ","); got != "small,large,Decline" || !strings.Contains(q.Text, "Which size?") || q.Out.PrivateTo != "" {
				t.Errorf("question = %q with buttons %s, want it in the conversation with small,large,Decline", q.Text, got)
			}
			a.h.submit(press("slack", "USTRANGER", "elicit:v0", q.Ref))
			note := a.waitPost(t, "refusing the stranger", func(p pipelinetest.Post) bool { return p.Out.PrivateTo == "USTRANGER" })
			if !strings.Contains(note.Text, "Only the person") {
				t.Errorf("stranger's note = %q, want who may answer", note.Text)
			}
			select {
			case r := <-a.replies:
				t.Fatalf("a stranger's press answered the question: %+v", r)
			default:
			}
			for _, ev := range tc.answer(q.Ref) {
				a.h.submit(ev)
			}
			b, _ := json.Marshal(a.reply(t))
			if string(b) != tc.want {
				t.Errorf("reply = %s, want %s", b, tc.want)
			}
		})
	}
}

// TestElicitationTimeoutDeclines: with no answer the wait ends (the server's bound), the tool
// gets decline, the turn goes on and the prompt shows why.
func TestElicitationTimeoutDeclines(t *testing.T) {
	a := startAsk(t, "slack", pipeline.Question{From: "MCP server shop", Message: "Which size?", Schema: json.RawMessage(askSchema)})
	a.h.model.Append(agenttest.CallTool("ask", `{}`))
	a.h.submit(chatEvent("slack", "UANN", "order a shirt"))
	a.waitPost(t, "with the question", isQuestion)
	a.cancel <- struct{}{}
	if r := a.reply(t); r.Action != pipeline.ElicitDecline {
		t.Errorf("reply after the bound = %+v, want decline", r)
	}
	a.waitPost(t, "edited to say it was declined", func(p pipelinetest.Post) bool {
		return isQuestion(p) && p.Edits > 0 && strings.Contains(p.Text, "No answer in time")
	})
	a.waitPost(t, "the turn's answer after the question", func(p pipelinetest.Post) bool { return p.Text == "done" })
}

// TestElicitationURLSentPrivately: a link is sent to the person alone (Slack: a message only
// they see; Discord: a DM), never in the shared conversation.
func TestElicitationURLSentPrivately(t *testing.T) {
	for _, platform := range []string{"slack", "discord"} {
		t.Run(platform, func(t *testing.T) {
			a := startAsk(t, platform, pipeline.Question{From: "MCP server shop", Mode: "url", Message: "Connect your account", Link: "https://shop.example/connect"})
			a.h.model.Append(agenttest.CallTool("ask", `{}`))
			a.h.submit(chatEvent(platform, "UANN", "connect"))
			if r := a.reply(t); r.Action != pipeline.ElicitAccept {
				t.Errorf("reply = %+v, want accept once the link is sent", r)
			}
			for _, p := range a.chat.Posts() {
				if !strings.Contains(p.Text, "https://shop.example/connect") {
					continue
				}
				if p.Out.PrivateTo != "UANN" || platform == "discord" && (!p.Out.Conversation.DM || p.Out.Conversation.Channel != "") {
					t.Errorf("link posted as %+v, want it to UANN alone (on Discord a DM)", p.Out)
				}
				return
			}
			t.Errorf("no post holds the link; posts: %+v", a.chat.Posts())
		})
	}
}

// TestElicitationInWebChat: the web chat shows the question as an ask event of the running
// turn's request, the person's next message answers it (its exchange ends with a note), and the
// turn goes on with the tool's result.
func TestElicitationInWebChat(t *testing.T) {
	a := startAsk(t, echogate.PlatformWeb, pipeline.Question{From: "MCP server shop", Tool: "shop__ask", Message: "Which size?", Schema: json.RawMessage(askSchema)})
	a.h.model.Append(agenttest.CallTool("ask", `{}`))
	first := msg("w1", "ann", "order a shirt")
	a.h.submit(first)
	ask := a.waitEvent(t, "asking the question", func(ev echogate.TurnEvent) bool { return ev.Type == echogate.TurnAsk })
	if ask.EventID != first.ID || ask.Tool != "shop__ask" || ask.CallID != "" || !strings.Contains(ask.Text, "Which size?") {
		t.Errorf("ask event = %+v, want the question under the request's event %s, naming the tool", ask, first.ID)
	}
	answer := msg("w1", "ann", "large")
	a.h.submit(answer)
	if r := a.reply(t); r.Action != pipeline.ElicitAccept || r.Content["size"] != "large" {
		t.Errorf("reply = %+v, want accept with size large", r)
	}
	for range 2 {
		d := a.waitDone(t)
		switch d.EventID {
		case answer.ID:
			if !strings.Contains(d.Text, "Answer sent") {
				t.Errorf("the answer's exchange ended with %q, want a note", d.Text)
			}
		case first.ID:
			if d.Text != "done" {
				t.Errorf("the turn ended with %q, want it to go on to its answer", d.Text)
			}
		}
	}
}
