package pipeline_test

import (
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

func TestPlanMessageUpdatedInPlaceAcrossPause(t *testing.T) {
	upd := func(step, status string) echogate.ToolCall {
		return echogate.ToolCall{Name: "plan", Arguments: `{"action":"update","step":` + step + `,"status":"` + status + `"}`}
	}
	del := newTool("delete_file", tools.Sensitive, "deleted")
	h := start(t, opts{tools: []tools.Tool{del}},
		agenttest.CallTools(echogate.ToolCall{Name: "plan", Arguments: `{"action":"set","title":"Clean up","steps":["list files","delete old ones","report"]}`}, upd("1", "done")),
		agenttest.CallTools(upd("2", "in_progress"), echogate.ToolCall{Name: "delete_file", Arguments: `{"path":"old.log"}`}),
		agenttest.CallTools(upd("2", "done"), upd("3", "done")),
		agenttest.Reply("Cleaned up: old.log is gone."))
	h.submit(msg("s1", "ann", "clean up old files"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("status = %s, want paused for the delete", d.Status)
	}
	planPost := func() pipelinetest.Post {
		t.Helper()
		var found []pipelinetest.Post
		for _, p := range h.rep.Posts() {
			if p.Out.Kind == echogate.OutPlan {
				found = append(found, p)
			}
		}
		if len(found) != 1 {
			t.Fatalf("plan messages = %d, want exactly one (updated in place)", len(found))
		}
		return found[0]
	}
	if p := planPost(); !strings.Contains(p.Text, "✅ 1. list files") || !strings.Contains(p.Text, "🔄 2. delete old ones") {
		t.Errorf("plan at the pause = %q", p.Text)
	}
	h.submit(reaction("s1", "ann", echogate.ReactionApprove, promptOf(t, h).Ref))
	if d := h.waitDone(); d.Text != "Cleaned up: old.log is gone." {
		t.Fatalf("answer = %q", d.Text)
	}
	p := planPost()
	for _, want := range []string{"✅ 1. list files", "✅ 2. delete old ones", "✅ 3. report"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("final plan %q lacks %q", p.Text, want)
		}
	}
	if p.Edits == 0 {
		t.Error("the plan message was never edited in place")
	}
	// The model saw the plan, rendered from state, after the resume too.
	reqs := h.model.Requests()
	if sys := reqs[len(reqs)-1].Messages[0].Content; !strings.Contains(sys, "✅ 3. report") {
		t.Errorf("last system prompt lacks the finished plan: %q", sys)
	}
}
