package pipeline

import (
	"context"
	"strings"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// statusThinking is the activity while the model works, as channels show it after the bot's
// name. Streamed text shows itself (Slack clears a thread's status when the reply posts), so
// the answer's deltas change nothing: a status update would take the channel budget the
// stream needs.
const statusThinking = "is thinking…"

// maxTasks bounds the tool calls an activity lists.
const maxTasks = 20

// activity is one turn's shared activity state (the design's SharedActivityState): the agent
// loop's events, from the loop goroutine and every concurrent tool goroutine, update one
// value; each change is handed to the channel's view, which renders it at its own bounded
// rate. It ends exactly once, when the turn ends (done, paused, failed or stopped).
type activity struct {
	mu      sync.Mutex
	view    echogate.ActivityView
	running []echogate.ToolCall     // tools running now, in start order
	tasks   []echogate.ActivityTask // the turn's tool calls, oldest first, at most maxTasks
	status  string
	plan    string
	ended   bool
}

// startActivity shows that the turn runs: through the channel's ActivityShower when it has
// one, else its typing indicator. The returned function ends it; it is idempotent.
func (t *turn) startActivity(ctx context.Context) func() {
	ev := t.ev
	if sh := t.caps.Activity; sh != nil {
		a := &activity{view: sh.StartActivity(ctx, ev.Conversation, ev.Message), status: statusThinking}
		t.act = a
		a.view.Show(a.snapshotLocked())
		return a.end
	}
	if ty := t.caps.Typer; ty != nil {
		return sync.OnceFunc(ty.StartTyping(ctx, ev.Conversation, ev.Message))
	}
	return func() {}
}

// observe folds one agent event into the state. Safe for concurrent use; nil-safe.
func (a *activity) observe(e agent.Event) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return
	}
	before := a.status + "\x00" + a.plan
	changed := false
	switch e.Type {
	case agent.EventLLMRequestStart:
		if len(a.running) == 0 {
			a.status = statusThinking
		}
	case agent.EventToolRunStart:
		a.running = append(a.running, e.Call)
		a.status = runningStatus(a.running)
		changed = true
		if len(a.tasks) == maxTasks {
			a.tasks = append(a.tasks[:0], a.tasks[1:]...)
		}
		a.tasks = append(a.tasks, echogate.ActivityTask{ID: e.Call.ID, Title: e.Call.Name, Status: echogate.TaskRunning})
	case agent.EventToolRunEnd:
		for i, c := range a.running {
			if c.ID == e.Call.ID {
				a.running = append(a.running[:i], a.running[i+1:]...)
				break
			}
		}
		if len(a.running) > 0 {
			a.status = runningStatus(a.running)
		} else {
			a.status = statusThinking
		}
		for i := range a.tasks {
			if a.tasks[i].ID == e.Call.ID {
				a.tasks[i].Status = echogate.TaskDone
				if e.Err != nil || e.Result.IsError {
					a.tasks[i].Status = echogate.TaskFailed
				}
			}
		}
		changed = true
	case agent.EventPlan:
		a.plan = e.Text
	default:
		return
	}
	if changed || a.status+"\x00"+a.plan != before {
		a.view.Show(a.snapshotLocked())
	}
}

func (a *activity) snapshotLocked() echogate.Activity {
	tools := make([]string, 0, len(a.running))
	for _, c := range a.running {
		tools = append(tools, c.Name)
	}
	return echogate.Activity{Status: a.status, Tools: tools, Plan: a.plan, Tasks: append([]echogate.ActivityTask(nil), a.tasks...)}
}

// end clears the view, once.
func (a *activity) end() {
	a.mu.Lock()
	if a.ended {
		a.mu.Unlock()
		return
	}
	a.ended = true
	a.mu.Unlock()
	a.view.End()
}

// runningStatus names the running tools: "is running http_fetch, recall…" (each name once).
func runningStatus(calls []echogate.ToolCall) string {
	seen := map[string]bool{}
	var names []string
	for _, c := range calls {
		if !seen[c.Name] {
			seen[c.Name] = true
			names = append(names, c.Name)
		}
	}
	return "is running " + strings.Join(names, ", ") + "…"
}
