package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/echogate/echogate/tools"
)

// PlanToolName is the system tool the loop itself handles when Params.Plan is on.
const PlanToolName = "plan"

// StepStatus of a plan step.
type StepStatus string

const (
	StepPending    StepStatus = "pending"
	StepInProgress StepStatus = "in_progress"
	StepDone       StepStatus = "done"
	StepSkipped    StepStatus = "skipped"
)

// PlanStep is one step of a plan.
type PlanStep struct {
	Text   string     `json:"text"`
	Status StepStatus `json:"status"`
}

// Plan is the visible plan of a long task. It is part of State, so it survives pauses and
// restarts, and it is rendered into the system prompt from the state itself: a summary of the
// conversation cannot rewrite it.
type Plan struct {
	Title string     `json:"title,omitempty"`
	Steps []PlanStep `json:"steps"`
}

// maxPlanSteps bounds a plan; a model asking for more gets an error result.
const maxPlanSteps = 30

// PlanSpec is the plan tool offered to the model.
var PlanSpec = tools.Spec{
	Name: PlanToolName,
	Description: "Keep a visible plan for a multi-step task. Use it when a task needs three or more steps: " +
		"action \"set\" with a title and the steps, then \"update\" a step's status (in_progress, done, skipped) " +
		"as you work, or \"add\" a step. The user sees the plan update live.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"action":{"type":"string","enum":["set","add","update"]},` +
		`"title":{"type":"string"},` +
		`"steps":{"type":"array","items":{"type":"string"},"maxItems":30},` +
		`"step":{"type":"integer","minimum":1,"description":"1-based step number for update"},` +
		`"text":{"type":"string","description":"step text for add"},` +
		`"status":{"type":"string","enum":["pending","in_progress","done","skipped"]}` +
		`},"required":["action"],"additionalProperties":false}`),
	Safety: tools.Safe,
}

type planArgs struct {
	Action string     `json:"action"`
	Title  string     `json:"title"`
	Steps  []string   `json:"steps"`
	Step   int        `json:"step"`
	Text   string     `json:"text"`
	Status StepStatus `json:"status"`
}

// applyPlan runs one plan call against the state's plan and returns the tool result.
func applyPlan(p *Plan, args string) (*Plan, tools.Result) {
	var a planArgs
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return p, tools.Errorf("plan: invalid arguments (%v); example: {\"action\":\"set\",\"title\":\"Release\",\"steps\":[\"build\",\"test\",\"publish\"]}", err)
	}
	switch a.Action {
	case "set":
		if len(a.Steps) == 0 || len(a.Steps) > maxPlanSteps {
			return p, tools.Errorf("plan: set needs 1 to %d steps", maxPlanSteps)
		}
		np := &Plan{Title: strings.TrimSpace(a.Title)}
		for _, s := range a.Steps {
			np.Steps = append(np.Steps, PlanStep{Text: strings.TrimSpace(s), Status: StepPending})
		}
		return np, tools.Result{Content: "plan set\n" + np.Render()}
	case "add":
		if p == nil {
			return p, tools.Errorf("plan: no plan yet; use action \"set\" first")
		}
		if strings.TrimSpace(a.Text) == "" || len(p.Steps) >= maxPlanSteps {
			return p, tools.Errorf("plan: add needs a non-empty text and at most %d steps in all", maxPlanSteps)
		}
		np := p.clone()
		np.Steps = append(np.Steps, PlanStep{Text: strings.TrimSpace(a.Text), Status: StepPending})
		return np, tools.Result{Content: "step added\n" + np.Render()}
	case "update":
		if p == nil {
			return p, tools.Errorf("plan: no plan yet; use action \"set\" first")
		}
		if a.Step < 1 || a.Step > len(p.Steps) {
			return p, tools.Errorf("plan: step %d does not exist (the plan has %d steps, numbered from 1)", a.Step, len(p.Steps))
		}
		switch a.Status {
		case StepPending, StepInProgress, StepDone, StepSkipped:
		default:
			return p, tools.Errorf("plan: status %q: use pending, in_progress, done or skipped", a.Status)
		}
		np := p.clone()
		np.Steps[a.Step-1].Status = a.Status
		return np, tools.Result{Content: fmt.Sprintf("step %d is %s\n", a.Step, a.Status) + np.Render()}
	}
	return p, tools.Errorf("plan: action %q: use set, add or update", a.Action)
}

func (p *Plan) clone() *Plan {
	c := *p
	c.Steps = append([]PlanStep(nil), p.Steps...)
	return &c
}

// Render is the plan as Markdown, the same for the same plan.
func (p *Plan) Render() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	title := p.Title
	if title == "" {
		title = "Plan"
	}
	fmt.Fprintf(&b, "**%s**\n", title)
	for i, s := range p.Steps {
		mark := "⬜"
		switch s.Status {
		case StepInProgress:
			mark = "🔄"
		case StepDone:
			mark = "✅"
		case StepSkipped:
			mark = "⏭️"
		}
		fmt.Fprintf(&b, "%s %d. %s\n", mark, i+1, s.Text)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Done reports whether every step is done or skipped.
func (p *Plan) Done() bool {
	if p == nil || len(p.Steps) == 0 {
		return false
	}
	for _, s := range p.Steps {
		if s.Status != StepDone && s.Status != StepSkipped {
			return false
		}
	}
	return true
}

// planPrompt is the system-prompt section that shows the model its plan.
func planPrompt(p *Plan) string {
	if p == nil {
		return ""
	}
	return "\n\n## Current plan (kept by the plan tool; update step statuses as you work)\n" + p.Render()
}
