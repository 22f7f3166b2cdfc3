package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// postText returns the current text of the posted message ref (after edits) and its edits.
func postText(h *harness, ref echogate.MessageRef) (string, int) {
	for _, p := range h.rep.Posts() {
		if p.Ref == ref {
			return p.Text, p.Edits
		}
	}
	return "", 0
}

// Whatever decides an approval (reaction, button — the same event as a reaction —, text,
// console, timeout, stop, a new message), the prompt is edited to show the outcome and who
// decided; a stranger's decision changes nothing.
func TestPromptShowsDecisionOnEveryPath(t *testing.T) {
	for name, tt := range map[string]struct {
		decide func(h *harness, prompt echogate.MessageRef)
		want   string
	}{
		"reaction approve": {func(h *harness, p echogate.MessageRef) {
			h.submit(reaction("s1", "ann", echogate.ReactionApprove, p))
		}, "✅ Approved once by ann."},
		"reaction approve for session": {func(h *harness, p echogate.MessageRef) {
			h.submit(reaction("s1", "ann", echogate.ReactionApproveSession, p))
		}, "🔁 Approved by ann; `delete_file` runs without asking for ann for the rest of this conversation (others are still asked)."},
		"reaction deny": {func(h *harness, p echogate.MessageRef) {
			h.submit(reaction("s1", "ann", echogate.ReactionDeny, p))
		}, "❌ Denied by ann; it was not run."},
		"text deny": {func(h *harness, _ echogate.MessageRef) {
			h.submit(msg("s1", "ann", "deny"))
		}, "❌ Denied by ann"},
		"console approver, by display name": {func(h *harness, p echogate.MessageRef) {
			ev := reaction("s1", "boss", echogate.ReactionApprove, p)
			ev.Actor.Name = "The Boss"
			h.submit(ev)
		}, "✅ Approved once by The Boss."},
		"timeout": {func(h *harness, _ echogate.MessageRef) {
			h.advance(2 * time.Hour)
		}, "⏱ Nobody decided within 1h0m0s; it was not run."},
		"new message": {func(h *harness, _ echogate.MessageRef) {
			h.submit(msg("s1", "ann", "never mind, what time is it?"))
		}, "↪️ Not run: ann sent a new message instead."},
	} {
		t.Run(name, func(t *testing.T) {
			del := newTool("delete_file", tools.Sensitive, "deleted")
			h := start(t, opts{tools: []tools.Tool{del}, cfg: pipeline.Config{Approvers: []string{"web:boss"},
				ApprovalTimeout: time.Hour, JanitorInterval: 5 * time.Millisecond}},
				agenttest.CallTool("delete_file", `{"path":"notes.txt"}`), agenttest.Reply("finished"))
			h.submit(msg("s1", "ann", "delete notes.txt"))
			if d := h.waitDone(); d.Status != "paused" {
				t.Fatalf("status = %s, want paused", d.Status)
			}
			prompt := promptOf(t, h).Ref

			// A stranger's reaction never decides, so the prompt stays as it is.
			h.submit(reaction("s1", "mallory", echogate.ReactionApprove, prompt))
			tt.decide(h, prompt)
			h.waitDone()
			text, edits := postText(h, prompt)
			if edits != 1 || !strings.Contains(text, tt.want) || !strings.Contains(text, "notes.txt") {
				t.Errorf("prompt after the decision = %q (%d edits), want one edit showing %q and the arguments", text, edits, tt.want)
			}
		})
	}
}

func TestPromptShowsStop(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "deleted")
	store := pipelinetest.NewMemStore()
	first := start(t, opts{store: store, tools: []tools.Tool{del}}, agenttest.CallTool("delete_file", `{"path":"a"}`))
	first.submit(msg("s1", "ann", "delete a"))
	first.waitDone()
	prompt := promptOf(t, first).Ref
	posts := first.rep.Posts()
	// A new process on the same store: no turn of this session is running there, so the stop
	// is the pause's (a stop racing the end of the turn that paused is the dispatcher's).
	first.stop()
	h := start(t, opts{store: store, tools: []tools.Tool{del}})
	for _, p := range posts {
		_, _ = h.rep.Send(context.Background(), p.Out) // the new replier knows the prompt as m1
	}
	h.submit(msg("s1", "ann", "!stop"))
	if d := h.waitDone(); d.Text != "Stopped. The pending tool call was not run." {
		t.Errorf("stop answered with %+v, want the stop's answer ending the exchange", d)
	}
	if text, _ := postText(h, prompt); !strings.Contains(text, "🛑 Stopped by ann; it was not run.") {
		t.Errorf("prompt after stop = %q, want it to show the stop and who stopped", text)
	}
	if del.calls.Load() != 0 {
		t.Error("tool ran after stop")
	}
}
