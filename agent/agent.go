// Package agent runs the agent loop: the model is called, its tool calls are executed (safe ones
// concurrently, the rest serially and each through the approval decision), their results go back
// to the model, until it stops, max_iterations, the budget, a stop, or a pause for a human.
//
// The loop reads nothing but its Input and Runtime: no globals, no reach into the pipeline. A pause
// returns a serializable State; resuming is a new Run with that State and the human's decision.
package agent

import (
	"context"
	"errors"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// Model streams one chat completion. Providers (agent/provider/openai), the router, breakers and
// the cost tracker all implement it; decorators wrap one another.
type Model interface {
	// Generate sends req and streams the answer. onDelta is called synchronously and in order for
	// each text or reasoning fragment; an error returned by onDelta aborts the stream and is
	// returned (wrapped) by Generate. Generate blocks until the model finished, the stream failed
	// or ctx ended.
	//
	// On error the Response may still carry the usage the provider reported (Failed set) and the
	// partial message; Usage.Model names the model that was tried. Errors that mean "try another
	// model" wrap ErrUnavailable; a *echogate.RetryAfterError carries a rate limit's wait.
	Generate(ctx context.Context, req Request, onDelta func(Delta) error) (Response, error)
}

// Request is one chat completion request in provider-neutral form.
type Request struct {
	Model       string
	Messages    []echogate.Message // the system prompt is Messages[0] when present
	Tools       []tools.Spec
	MaxTokens   int
	Temperature *float32
	// Hints for a routing Model (ModelRouter): what the turn looks like. Providers ignore them.
	Hints Hints
	// CacheKey names the requests that share a prompt prefix (the turns of one session), for
	// providers with prompt caching (OpenAI's prompt_cache_key). Empty means none. The loop
	// sets it to Params.CacheKey, or the session of Params.Hints.
	CacheKey string
	// ReportUsage receives the usage of the calls a routing Model made for this request besides
	// the one its Response describes (a router's failed attempts), attributed to the caller's
	// turn. The loop sets it to Runtime.ReportUsage; nil leaves them to the Model's own
	// reporting. Providers ignore it.
	ReportUsage func(echogate.Usage)
}

// Hints describe a turn for model routing.
type Hints struct {
	Session     echogate.SessionKey
	UserID      string
	Channel     string // platform:channel
	Attachments int
	Override    string // an explicit model asked for (the /model command, channel or user config)
	// Route names a route to take whatever the rules say (an agent profile's `model:` naming a
	// route); an unknown name is ignored.
	Route string
}

// Delta is one streamed fragment.
type Delta struct {
	Text      string
	Reasoning string
}

// Response is one completed model call.
type Response struct {
	Message      echogate.Message // role assistant; content and assembled tool calls
	Usage        echogate.Usage   // Kind UsageModel; Model set; zero tokens when the provider sent none
	FinishReason string           // "stop", "tool_calls", "length", "content_filter"
	Model        string           // the model that answered (after routing)
	RouteReason  string           // why a router chose it; empty without a router
}

// Verdict is the approval gate's answer for one tool call.
type Verdict uint8

const (
	Allow Verdict = iota
	Deny
	Ask
)

// Decision is the gate's verdict with the reason shown to the model on Deny.
type Decision struct {
	Verdict Verdict
	Reason  string
}

// Params are the model parameters of a run.
type Params struct {
	Model           string
	MaxIterations   int // model calls per turn; 0 means 8
	MaxTokens       int
	Temperature     *float32
	ToolConcurrency int // safe calls run at once; 0 means 4
	Hints           Hints
	// CacheKey is the Request.CacheKey of every model call; empty means Hints.Session.
	CacheKey string
	// Plan offers the plan system tool, handled by the loop itself; the plan lives in State.
	Plan bool
}

// Runtime is everything the loop may use. Nil funcs are no-ops (Authorize nil allows everything).
type Runtime struct {
	Model  Model
	Params Params
	Tools  []tools.Spec // the catalogue offered to the model
	// Authorize decides each call before it runs. It may do I/O (session grants).
	Authorize func(ctx context.Context, call echogate.ToolCall, spec tools.Spec) Decision
	// ExecuteTool runs one call. A tool failure the model should see is a Result with IsError; a
	// Go error fails the turn, except *tools.AskUserError, which pauses it for the user's answer.
	ExecuteTool func(ctx context.Context, call echogate.ToolCall) (tools.Result, error)
	// IsStopping is polled between stream chunks and between tool calls.
	IsStopping func() bool
	// Emit receives every Event in order, synchronously; it must not block for long.
	Emit func(Event)
	// ReportUsage receives every usage exactly once, as soon as it is known.
	ReportUsage func(echogate.Usage)
	// BeforeModelCall runs before every model call (budgets). An error stops the turn: status
	// aborted when it wraps ErrBudget, error otherwise.
	BeforeModelCall func(ctx context.Context, req Request) error
	// Compact may shorten the messages before a model call when they near the context window; it
	// reports its own usage through ReportUsage and returns the messages unchanged when nothing
	// needs doing. A compaction emits EventCompressed.
	Compact func(ctx context.Context, msgs []echogate.Message) ([]echogate.Message, bool, error)
}

// Input starts or resumes a run.
type Input struct {
	System string // system prompt, prepended as Messages[0]
	// Messages: for a new run, the history plus the new user message; when resuming, messages to
	// append after the pending calls are resolved (a new user message that arrived meanwhile).
	Messages []echogate.Message
	State    *State  // resume from a paused run
	Resume   *Resume // the decision or answer for State.Pending[0]
	// Buf, when set, hands the run the array a new run's Messages were built in, so that it
	// keeps them there instead of in a copy (the turn's largest allocation after the history
	// itself): Messages must be Buf[1:1+len(Messages)], Buf[0] is the run's slot for the system
	// message and the capacity after the messages the room for the ones the turn adds (see
	// NewBuf). The run then writes into Buf's array: the caller must not use Buf afterwards,
	// nor modify Messages' elements. A Buf that does not hold Messages this way is ignored (the
	// messages are copied).
	Buf []echogate.Message
}

// NewBuf returns an Input.Buf for n messages: length 1 (the system message's slot), room for n
// messages and the ones a turn usually adds. Build the messages in Buf[1:1] by appending, at
// most n of them.
func NewBuf(n int) []echogate.Message { return make([]echogate.Message, 1, 1+n+msgHeadroom) }

// Resume is a human's answer to a pause.
type Resume struct {
	CallID   string
	Approved bool   // approval: run the call
	Reason   string // approval denied: the text the model sees ("not approved: …")
	Answer   string // ask_user: the user's answer
}

// State is what resuming needs. It serializes to JSON.
type State struct {
	Messages  []echogate.Message  `json:"messages"`             // conversation so far, without the system prompt
	Pending   []echogate.ToolCall `json:"pending,omitempty"`    // calls of the last response not yet answered; [0] is paused
	Iteration int                 `json:"iteration"`            // model calls made so far in this turn
	PauseKind echogate.PauseKind  `json:"pause_kind,omitempty"` // what Pending[0] waits for
	Plan      *Plan               `json:"plan,omitempty"`       // the visible plan, when one was set
	// Notes are the caller's values carried with the state across a pause (the pipeline keeps
	// the plan message's reference there). The loop never reads them.
	Notes map[string]string `json:"notes,omitempty"`
}

// Status of a finished Run.
type Status string

const (
	StatusDone    Status = "done"
	StatusPaused  Status = "paused"
	StatusAborted Status = "aborted"
	StatusError   Status = "error"
)

// Pause says what a paused run waits for.
type Pause struct {
	Kind     echogate.PauseKind
	Call     echogate.ToolCall
	Question string // ask_user's question
}

// Result of a Run. On error it still carries the messages and usage produced so far.
type Result struct {
	Status       Status
	Pause        *Pause
	Messages     []echogate.Message // messages the loop added (assistant, tool results; when resuming also Input.Messages, placed after the resolved calls), in order
	State        State              // full state; persist it when paused
	Usage        []echogate.Usage   // every usage reported during this Run, in order
	Answer       string             // the assistant text of this Run, paragraphs joined (partial when aborted)
	FinishReason string             // the model's, or "max_iterations", "stopped", "budget"
	Model        string             // the model of the last call
	RouteReason  string
	Err          error
}

// EventType names an Event.
type EventType string

const (
	EventLLMRequestStart   EventType = "llm_request_start"
	EventLLMRequestEnd     EventType = "llm_request_end"
	EventAnswerDelta       EventType = "answer_delta"
	EventReasoningDelta    EventType = "reasoning_delta"
	EventToolCall          EventType = "tool_call"
	EventToolRunStart      EventType = "tool_run_start"
	EventToolRunEnd        EventType = "tool_run_end"
	EventApprovalRequested EventType = "approval_requested"
	EventAsk               EventType = "ask"
	EventCompressed        EventType = "compressed"
	EventPlan              EventType = "plan"
)

// Event is one step of a run, for the channel streamer and the recorder.
type Event struct {
	Type      EventType
	Iteration int
	Text      string            // deltas, the ask question, the plan text
	Call      echogate.ToolCall // tool events
	Result    tools.Result      // tool_run_end
	Model     string            // llm_request_*
	Usage     echogate.Usage    // llm_request_end
	Err       error             // llm_request_end, tool_run_end on failure
}

// Sentinel errors.
var (
	// ErrStopped is returned (wrapped) when IsStopping reported true or a stop was requested.
	ErrStopped = errors.New("agent: stopped")
	// ErrBudget is wrapped by BeforeModelCall errors that mean a budget is exhausted.
	ErrBudget = errors.New("agent: budget exhausted")
	// ErrUnavailable is wrapped by Model errors that mean the model could not answer now (5xx,
	// 429, timeout, open breaker): a router tries the next model in its chain.
	ErrUnavailable = errors.New("agent: model unavailable")
	// ErrBadResume means Input.Resume does not match State.Pending[0].
	ErrBadResume = errors.New("agent: resume does not match the pending call")
)
