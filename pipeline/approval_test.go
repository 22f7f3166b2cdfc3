package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// promptOf returns the approval prompt posted for a paused turn.
func promptOf(t *testing.T, h *harness) pipelinetest.Post {
	t.Helper()
	for _, p := range h.rep.Posts() {
		if p.Out.Kind == echogate.OutApprovalPrompt {
			return p
		}
	}
	t.Fatalf("no approval prompt posted; posts: %q", h.rep.Texts())
	return pipelinetest.Post{}
}

func lastText(h *harness) string {
	texts := h.rep.Texts()
	if len(texts) == 0 {
		return ""
	}
	return texts[len(texts)-1]
}

func TestApprovalByReaction(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "deleted notes.txt")
	h := start(t, opts{tools: []tools.Tool{del}},
		agenttest.CallTool("delete_file", `{"path":"notes.txt","api_key":"sk-secret"}`),
		agenttest.Reply("Done, notes.txt is gone."))
	h.submit(msg("s1", "ann", "delete notes.txt"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("status = %s, want paused", d.Status)
	}
	p := promptOf(t, h)
	if !strings.Contains(p.Text, "delete_file") || !strings.Contains(p.Text, "notes.txt") || strings.Contains(p.Text, "sk-secret") {
		t.Errorf("prompt = %q, want the tool and its arguments with the secret redacted", p.Text)
	}
	if got := strings.Join(p.Out.Reactions, ""); got != "✅🔁❌" {
		t.Errorf("prompt reactions = %q, want ✅🔁❌", got)
	}
	if del.calls.Load() != 0 {
		t.Fatal("tool ran before approval")
	}

	// A stranger's ✅ does nothing; neither does the requester's ✅ on another message.
	h.submit(reaction("s1", "mallory", echogate.ReactionApprove, p.Ref))
	h.submit(reaction("s1", "ann", echogate.ReactionApprove, echogate.MessageRef{Platform: "web", Channel: "s1", ID: "other"}))
	// The requester's ✅ on the prompt runs the tool once and the answer follows.
	h.submit(reaction("s1", "ann", echogate.ReactionApprove, p.Ref))
	d := h.waitDone()
	if d.Status != "done" || d.Text != "Done, notes.txt is gone." {
		t.Fatalf("after approval: %+v", d)
	}
	if n := del.calls.Load(); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
	want := "user:delete notes.txt|assistant→delete_file|tool:deleted notes.txt|assistant:Done, notes.txt is gone."
	if got := strings.Join(h.transcript("s1"), "|"); got != want {
		t.Errorf("transcript = %s\nwant %s", got, want)
	}
}

func TestApproveForSessionGrantsTool(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "ok")
	h := start(t, opts{tools: []tools.Tool{del}},
		agenttest.CallTool("delete_file", `{"path":"a"}`), agenttest.Reply("deleted a"),
		agenttest.CallTool("delete_file", `{"path":"b"}`), agenttest.Reply("deleted b"))
	h.submit(msg("s1", "ann", "delete a"))
	h.waitDone()
	h.submit(reaction("s1", "ann", echogate.ReactionApproveSession, promptOf(t, h).Ref))
	h.waitDone()
	h.submit(msg("s1", "ann", "delete b"))
	if d := h.waitDone(); d.Status != "done" || d.Text != "deleted b" {
		t.Fatalf("second call = %+v, want it to run without a prompt", d)
	}
	prompts := 0
	for _, p := range h.rep.Posts() {
		if p.Out.Kind == echogate.OutApprovalPrompt {
			prompts++
		}
	}
	if prompts != 1 || del.calls.Load() != 2 {
		t.Errorf("prompts = %d, tool calls = %d; want 1 prompt and 2 calls", prompts, del.calls.Load())
	}
}

func TestDenyByReactionAndApproverAndText(t *testing.T) {
	for name, tc := range map[string]struct {
		decide  func(h *harness, prompt echogate.MessageRef) echogate.InboundEvent
		ran     bool
		toolMsg string
	}{
		"requester denies": {func(h *harness, p echogate.MessageRef) echogate.InboundEvent {
			return reaction("s1", "ann", echogate.ReactionDeny, p)
		}, false, "not approved: ann denied it"},
		"approver approves": {func(h *harness, p echogate.MessageRef) echogate.InboundEvent {
			return reaction("s1", "boss", echogate.ReactionApprove, p)
		}, true, "ok"},
		"text approve": {func(h *harness, p echogate.MessageRef) echogate.InboundEvent {
			return msg("s1", "ann", "approve")
		}, true, "ok"},
		"text deny": {func(h *harness, p echogate.MessageRef) echogate.InboundEvent {
			return msg("s1", "ann", "Deny")
		}, false, "not approved: ann denied it"},
	} {
		t.Run(name, func(t *testing.T) {
			// Sensitive: the requester decides it (a destructive call needs an approver, see
			// TestRequesterCannotApproveOwnDestructiveCall).
			del := newTool("delete_file", tools.Sensitive, "ok")
			h := start(t, opts{tools: []tools.Tool{del}, cfg: pipeline.Config{Approvers: []string{"web:boss"}}},
				agenttest.CallTool("delete_file", `{}`), agenttest.Reply("final"))
			h.submit(msg("s1", "ann", "go"))
			h.waitDone()
			h.submit(tc.decide(h, promptOf(t, h).Ref))
			if d := h.waitDone(); d.Status != "done" {
				t.Fatalf("status = %s", d.Status)
			}
			if ran := del.calls.Load() == 1; ran != tc.ran {
				t.Errorf("tool ran = %v, want %v", ran, tc.ran)
			}
			tr := h.transcript("s1")
			if got := tr[2]; got != "tool:"+tc.toolMsg {
				t.Errorf("tool result = %q, want %q", got, "tool:"+tc.toolMsg)
			}
		})
	}
}

func TestNewMessageWhilePausedDeniesAndContinues(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "ok")
	h := start(t, opts{tools: []tools.Tool{del}},
		agenttest.CallTool("delete_file", `{}`), agenttest.Reply("Fine, I won't."))
	h.submit(msg("s1", "ann", "delete it"))
	h.waitDone()
	h.submit(msg("s1", "ann", "actually keep it"))
	if d := h.waitDone(); d.Text != "Fine, I won't." {
		t.Fatalf("answer = %q", d.Text)
	}
	want := "user:delete it|assistant→delete_file|tool:not approved: user sent a new message|user:actually keep it|assistant:Fine, I won't."
	if got := strings.Join(h.transcript("s1"), "|"); got != want {
		t.Errorf("transcript = %s\nwant %s", got, want)
	}
	if del.calls.Load() != 0 {
		t.Error("tool ran")
	}
}

func TestApprovalTimeoutDenies(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "ok")
	h := start(t, opts{tools: []tools.Tool{del}, cfg: pipeline.Config{ApprovalTimeout: time.Hour, JanitorInterval: 5 * time.Millisecond}},
		agenttest.CallTool("delete_file", `{}`), agenttest.Reply("It timed out, so nothing was deleted."))
	h.submit(msg("s1", "ann", "delete"))
	h.waitDone()
	h.advance(2 * time.Hour)
	if d := h.waitDone(); d.Status != "done" {
		t.Fatalf("after timeout: %+v", d)
	}
	if del.calls.Load() != 0 {
		t.Error("tool ran after timeout")
	}
	found := false
	for _, text := range h.rep.Texts() {
		if strings.Contains(text, "Nobody approved `delete_file`") {
			found = true
		}
	}
	if !found {
		t.Errorf("user not told about the timeout; posts: %q", h.rep.Texts())
	}
	tr := h.transcript("s1")
	if !strings.HasPrefix(tr[2], "tool:not approved: nobody approved within") {
		t.Errorf("tool result = %q", tr[2])
	}
}

func TestPauseSurvivesRestart(t *testing.T) {
	store := pipelinetest.NewMemStore()
	del := newTool("delete_file", tools.Sensitive, "ok")
	h := start(t, opts{store: store, tools: []tools.Tool{del}}, agenttest.CallTool("delete_file", `{}`))
	h.submit(msg("s1", "ann", "delete"))
	h.waitDone()
	prompt := promptOf(t, h).Ref
	h.stop()

	h2 := start(t, opts{store: store, tools: []tools.Tool{del}}, agenttest.Reply("deleted after restart"))
	h2.submit(reaction("s1", "ann", echogate.ReactionApprove, prompt))
	if d := h2.waitDone(); d.Text != "deleted after restart" {
		t.Fatalf("after restart: %+v", d)
	}
	if del.calls.Load() != 1 {
		t.Errorf("tool calls = %d, want 1", del.calls.Load())
	}
}

func TestAskUserRoundTrip(t *testing.T) {
	ask := &funcTool{spec: tools.Spec{Name: "ask_user", Safety: tools.Safe}, fn: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		var a struct{ Question string }
		_ = json.Unmarshal(args, &a)
		return tools.Result{}, &tools.AskUserError{Question: a.Question}
	}}
	h := start(t, opts{tools: []tools.Tool{ask}},
		agenttest.CallTool("ask_user", `{"question":"Which city?"}`), agenttest.Reply("Oslo is cold."))
	h.submit(msg("s1", "ann", "weather?"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("status = %s", d.Status)
	}
	if got := lastText(h); got != "❓ Which city?" {
		t.Errorf("question posted = %q", got)
	}
	h.submit(msg("s1", "ann", "Oslo"))
	if d := h.waitDone(); d.Text != "Oslo is cold." {
		t.Fatalf("answer = %q", d.Text)
	}
	req := h.model.Requests()[1]
	if last := req.Messages[len(req.Messages)-1]; last.Role != echogate.RoleTool || last.Content != "Oslo" {
		t.Errorf("model saw %+v, want the answer as the ask_user result", last)
	}
}

func TestAutoApproveAndPolicy(t *testing.T) {
	del := newTool("delete_file", tools.Destructive, "ok")
	clock := newTool("current_time", tools.Safe, "noon")
	h := start(t, opts{tools: []tools.Tool{del, clock}, cfg: pipeline.Config{ToolPolicy: map[string]string{"current_time": "deny"}}},
		agenttest.CallTool("delete_file", `{}`), agenttest.Reply("deleted"),
		agenttest.CallTool("current_time", `{}`), agenttest.Reply("no clock"))
	ev := msg("s1", "ann", "delete")
	ev.AutoApprove = true
	h.submit(ev)
	if d := h.waitDone(); d.Text != "deleted" || del.calls.Load() != 1 {
		t.Fatalf("auto-approved turn = %+v, tool calls %d", d, del.calls.Load())
	}
	h.submit(msg("s1", "ann", "time?"))
	if d := h.waitDone(); d.Text != "no clock" || clock.calls.Load() != 0 {
		t.Fatalf("denied-by-policy turn = %+v, tool calls %d", d, clock.calls.Load())
	}
	tr := h.transcript("s1")
	if !strings.Contains(tr[len(tr)-2], "policy denies tool current_time") {
		t.Errorf("tool result = %q, want the policy denial", tr[len(tr)-2])
	}
}

func TestToolPanicAndErrorBecomeToolErrors(t *testing.T) {
	boom := &funcTool{spec: tools.Spec{Name: "boom", Safety: tools.Safe}, fn: func(context.Context, json.RawMessage) (tools.Result, error) {
		panic("kaboom")
	}}
	h := start(t, opts{tools: []tools.Tool{boom}}, agenttest.CallTool("boom", `{}`), agenttest.Reply("that tool is broken"))
	h.submit(msg("s1", "ann", "x"))
	if d := h.waitDone(); d.Status != "done" {
		t.Fatalf("status = %s", d.Status)
	}
	if tr := h.transcript("s1"); !strings.Contains(tr[2], "internal error (panic)") {
		t.Errorf("tool result = %q", tr[2])
	}
}

func TestToolsSeeTheirCaller(t *testing.T) {
	who := &funcTool{spec: tools.Spec{Name: "whoami", Safety: tools.Safe}, fn: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		c, ok := tools.CallerFrom(ctx)
		if !ok {
			return tools.Errorf("no caller"), nil
		}
		return tools.Result{Content: c.UserID + " in " + string(c.Session) + " via " + c.Channel}, nil
	}}
	h := start(t, opts{tools: []tools.Tool{who}}, agenttest.CallTool("whoami", `{}`), agenttest.Reply("ok"))
	h.submit(msg("s1", "ann", "who am I"))
	h.waitDone()
	if tr := h.transcript("s1"); tr[2] != "tool:web:ann in web:s1 via web:s1" {
		t.Errorf("tool saw %q, want the turn's user, session and channel", tr[2])
	}
}
