package slack

import (
	"strings"
	"sync"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// threadActivity is a running turn's activity in one thread, shared by its view (which the
// pipeline updates) and the reply streamed there: with native streaming, the turn's tool calls
// appear as task cards in the reply (task_update chunks), each sent again when its state
// changes, under the plan's title (plan_update) when the model keeps a plan.
type threadActivity struct {
	mu       sync.Mutex
	tasks    []echogate.ActivityTask
	sent     map[string]echogate.TaskStatus // what the reply shows
	plan     string                         // the plan's title (plan_update), when the model keeps one
	sentPlan string
	stream   *stream
}

func (a *threadActivity) update(act echogate.Activity) (changed bool, s *stream) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range act.Tasks {
		if a.sent[t.ID] != t.Status {
			changed = true
		}
	}
	a.tasks = act.Tasks
	a.plan = planTitle(act.Plan)
	return changed || a.plan != a.sentPlan, a.stream
}

// planTitle is the first line of a rendered plan, without its Markdown emphasis.
func planTitle(plan string) string {
	title, _, _ := strings.Cut(strings.TrimSpace(plan), "\n")
	return strings.Trim(strings.TrimSpace(title), "*_ ")
}

func (a *threadActivity) attach(s *stream) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stream = s
}

// pending returns the task chunks the reply does not show yet; commit records them as shown
// once the call carrying them succeeded.
func (a *threadActivity) pending() (chunks []slack.StreamChunk, commit func()) {
	if a == nil {
		return nil, func() {}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var shown []echogate.ActivityTask
	plan := a.plan
	if plan != "" && plan != a.sentPlan {
		chunks = append(chunks, slack.NewPlanUpdateChunk(safeText(plan)))
	}
	for _, t := range a.tasks {
		if a.sent[t.ID] == t.Status {
			continue
		}
		ch := slack.NewTaskUpdateChunk(t.ID, safeText(t.Title))
		switch t.Status {
		case echogate.TaskDone:
			ch.Status = slack.TaskCardStatusComplete
		case echogate.TaskFailed:
			ch.Status = slack.TaskCardStatusError
		default:
			ch.Status = slack.TaskCardStatusInProgress
		}
		chunks = append(chunks, ch)
		shown = append(shown, t)
	}
	return chunks, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.sent == nil {
			a.sent = map[string]echogate.TaskStatus{}
		}
		for _, t := range shown {
			a.sent[t.ID] = t.Status
		}
		if plan != "" {
			a.sentPlan = plan
		}
	}
}

// streamText is the option carrying text (and pending task cards) of a streaming call. text is
// already escaped (safeMarkdown); the cards' titles are escaped by pending.
func streamText(text string, tasks []slack.StreamChunk) slack.MsgOption {
	if len(tasks) == 0 {
		return slack.MsgOptionMarkdownText(text)
	}
	if text != "" {
		tasks = append(tasks, slack.NewMarkdownTextChunk(text))
	}
	return slack.MsgOptionChunks(tasks...)
}
