package echogate

// ThreadMessage is one earlier message of a thread, as an adapter read it from the platform.
type ThreadMessage struct {
	Author string `json:"author"`           // the author's display name (or id when unknown)
	Text   string `json:"text"`             // the message text, markup removed
	IsBot  bool   `json:"is_bot,omitempty"` // posted by a bot (this gateway included)
	// AuthorID and AuthorTeam identify the author as Actor.ID and Actor.Team do, so the
	// pipeline can leave out what people the access rules refuse wrote.
	AuthorID   string `json:"author_id,omitempty"`
	AuthorTeam string `json:"author_team,omitempty"`
	// Withheld marks a message the pipeline left out because the access rules refuse its
	// author: its author and text are cleared before the event is recorded; the model is told
	// only how many were left out.
	Withheld bool `json:"withheld,omitempty"`
}

// Activity is what a running turn is doing right now, for channels that show it: shared by the
// agent loop and every concurrent tool of the turn.
type Activity struct {
	// Status is a short human-readable line: "is thinking…", "is running http_fetch, recall…",
	// "is writing…".
	Status string
	// Tools are the tools running now, in the order they started.
	Tools []string
	// Plan is the rendered plan of a long task, when the model keeps one.
	Plan string
	// Tasks are the turn's tool calls so far, oldest first (bounded), for channels that show
	// them as task cards (Slack native streaming).
	Tasks []ActivityTask
}

// TaskStatus is the state of one tool call of a running turn.
type TaskStatus string

const (
	TaskRunning TaskStatus = "running"
	TaskDone    TaskStatus = "done"
	TaskFailed  TaskStatus = "failed"
)

// ActivityTask is one tool call of a running turn.
type ActivityTask struct {
	ID     string     // the tool call id
	Title  string     // the tool's name
	Status TaskStatus // running, done or failed
}

// ActivityView shows one turn's activity in a conversation. Show never blocks on the network
// (channels apply updates at their own bounded rate); End clears what was shown, is
// idempotent, and returns once the clearing was attempted (bounded by the channel's request
// timeout).
type ActivityView interface {
	Show(a Activity)
	End()
}
