package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

func TestPlanSurvivesPauseAndEndsDone(t *testing.T) {
	upd := func(id string, step int, status string) echogate.ToolCall {
		return call(id, PlanToolName, `{"action":"update","step":`+string(rune('0'+step))+`,"status":"`+status+`"}`)
	}
	m := &fakeModel{steps: []step{
		{calls: []echogate.ToolCall{call("p1", PlanToolName, `{"action":"set","title":"Ship it","steps":["build","deploy","announce"]}`), upd("p2", 1, "in_progress")}},
		{calls: []echogate.ToolCall{upd("p3", 1, "done"), call("d1", "delete_all", `{}`)}},
		{calls: []echogate.ToolCall{upd("p4", 2, "done"), upd("p5", 3, "done")}},
		{text: []string{"All three steps are done."}},
	}}
	rec := &recorder{}
	exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
		return tools.Result{Content: "ok"}, nil
	}
	rt := runtimeFor(m, rec, exec, deleteSpec)
	rt.Params.Plan = true
	res := Run(context.Background(), Input{System: "sys", Messages: user("ship it")}, rt)
	if res.Status != StatusPaused {
		t.Fatalf("Run = %s (%v), want paused for the delete", res.Status, res.Err)
	}
	if res.State.Plan == nil || res.State.Plan.Steps[0].Status != StepDone {
		t.Fatalf("plan before the pause = %+v, want step 1 done", res.State.Plan)
	}
	// The pause goes through JSON (it is persisted) and the plan comes back with it.
	raw, _ := json.Marshal(res.State)
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	res = Run(context.Background(), Input{System: "sys", State: &st, Resume: &Resume{CallID: "d1", Approved: true}}, rt)
	if res.Status != StatusDone || !res.State.Plan.Done() {
		t.Fatalf("after resume: %s, plan %+v; want done with every step done", res.Status, res.State.Plan)
	}
	// The model sees the plan in its system prompt, rendered from the state.
	last := m.reqs[len(m.reqs)-1]
	if sys := last.Messages[0].Content; !strings.Contains(sys, "## Current plan") || !strings.Contains(sys, "✅ 3. announce") {
		t.Errorf("system prompt = %q, want the finished plan", sys)
	}
	var plans []string
	for _, e := range rec.events {
		if e.Type == EventPlan {
			plans = append(plans, e.Text)
		}
	}
	if len(plans) != 5 || !strings.HasPrefix(plans[0], "**Ship it**\n⬜ 1. build") {
		t.Errorf("plan events = %q, want 5 renders starting with the new plan", plans)
	}
	offered := false
	for _, s := range m.reqs[0].Tools {
		offered = offered || s.Name == PlanToolName
	}
	if !offered {
		t.Error("the plan tool was not offered")
	}
}

func TestApplyPlanErrors(t *testing.T) {
	p := &Plan{Steps: []PlanStep{{Text: "a", Status: StepPending}}}
	for args, want := range map[string]string{
		`{"action":"update","step":3,"status":"done"}`:     "step 3 does not exist",
		`{"action":"update","step":1,"status":"finished"}`: `status "finished"`,
		`{"action":"set","steps":[]}`:                      "set needs 1 to",
		`{"action":"explode"}`:                             `action "explode"`,
		`{"action":"set","bogus":1}`:                       "invalid arguments",
	} {
		_, res := applyPlan(p, args)
		if !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("applyPlan(%s) = %+v, want an error naming %q", args, res, want)
		}
	}
	if _, res := applyPlan(nil, `{"action":"add","text":"x"}`); !res.IsError {
		t.Error("add without a plan should fail")
	}
}
