package echogate

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Role of a transcript message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text, as the model produced it
}

// ImagePart is an image sent to a vision-capable model.
type ImagePart struct {
	URL  string `json:"url,omitempty"`  // https or data: URL
	MIME string `json:"mime,omitempty"` // for data URLs
}

// Message is one provider-neutral chat message: what the transcript stores and the model sees.
type Message struct {
	Role    Role        `json:"role"`
	Content string      `json:"content,omitempty"`
	Images  []ImagePart `json:"images,omitempty"`
	// Attachments are the files a user message came with (metadata; read_file fetches them).
	Attachments []Attachment `json:"attachments,omitempty"`
	ToolCalls   []ToolCall   `json:"tool_calls,omitempty"`   // assistant
	ToolCallID  string       `json:"tool_call_id,omitempty"` // tool result
	Name        string       `json:"name,omitempty"`         // tool name on a tool result
	IsError     bool         `json:"is_error,omitempty"`     // tool result reported an error
}

// UsageKind says what consumed tokens or money.
type UsageKind string

const (
	UsageModel         UsageKind = "model"
	UsageEmbedding     UsageKind = "embedding"
	UsageCompression   UsageKind = "compression"
	UsageConsolidation UsageKind = "consolidation"
	UsageTool          UsageKind = "tool"
)

// Usage is one metered consumption. Producers report it once through the runtime's ReportUsage;
// the cost tracker prices it and the ledger stores it. Nothing re-sums usage to bill again.
type Usage struct {
	Kind              UsageKind `json:"kind"`
	Model             string    `json:"model,omitempty"`
	InputTokens       int64     `json:"input_tokens"`
	OutputTokens      int64     `json:"output_tokens"`
	CachedInputTokens int64     `json:"cached_input_tokens,omitempty"`
	// CostUSD is filled by the cost tracker from the price table (producers leave it 0 unless the
	// provider reports a price itself).
	CostUSD float64 `json:"cost_usd"`
	// Failed marks a call that failed; it is recorded with its real usage (often zero).
	Failed bool `json:"failed,omitempty"`
}

// RetryAfterError is returned by platform and model clients when the remote side asked to wait.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("rate limited, retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter reports the wait asked for by the first RetryAfterError in err's chain.
func RetryAfter(err error) (time.Duration, bool) {
	var r *RetryAfterError
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}

// TurnEventType names a TurnEvent. The names are the SSE event names of POST /api/chat.
type TurnEventType string

const (
	TurnStarted         TurnEventType = "start"
	TurnDelta           TurnEventType = "delta"
	TurnReasoning       TurnEventType = "reasoning"
	TurnToolCall        TurnEventType = "tool_call"
	TurnToolResult      TurnEventType = "tool_result"
	TurnApprovalRequest TurnEventType = "approval_request"
	TurnAsk             TurnEventType = "ask"
	TurnPlan            TurnEventType = "plan"
	TurnDone            TurnEventType = "done"
	TurnError           TurnEventType = "error"
)

// TurnEvent is one observable step of a turn, delivered in order to channels that observe turns
// (the web channel streams them as SSE). Seq increases by one per event within a session.
type TurnEvent struct {
	Type    TurnEventType `json:"type"`
	Session SessionKey    `json:"session"`
	Turn    string        `json:"turn"`
	Seq     int64         `json:"seq"`
	Text    string        `json:"text,omitempty"`    // delta text, final answer, error or notice text
	Tool    string        `json:"tool,omitempty"`    // tool name
	CallID  string        `json:"call_id,omitempty"` // tool call id
	Args    string        `json:"args,omitempty"`    // tool arguments (redacted, capped)
	Status  string        `json:"status,omitempty"`  // done: done|paused|aborted|error
	IsError bool          `json:"is_error,omitempty"`
	EventID string        `json:"event_id,omitempty"` // InboundEvent.ID that started the turn
	Time    time.Time     `json:"time"`
	// Detail is an error's cause for the operator's own terminal (the console channel prints
	// it): chat users see Text only, so it is never serialized.
	Detail string `json:"-"`
}

// Stream is a reply being streamed into a platform message. Channels that can stream return one
// from StartStream; the pipeline appends deltas and finishes with the whole answer.
//
// Append never blocks on the network for long: channels coalesce deltas and flush at their own
// bounded rate. Finish posts or edits the final, complete text (split as the platform requires),
// exactly once, and returns the message references that hold it. After Finish, the stream is done;
// further calls return an error.
type Stream interface {
	Append(ctx context.Context, delta string) error
	Finish(ctx context.Context, final string) ([]MessageRef, error)
}

// PostNotifier is a Stream that reports the message it creates. OnPost(fn) makes the stream
// call fn once, with the reference of its first message, right after the platform created it
// and before the stream shows more text. fn may block (the pipeline makes the reference
// durable, so a restart can finish that message); OnPost is called before the first Append.
type PostNotifier interface {
	OnPost(fn func(MessageRef))
}

// ErrNotFound is wrapped by stores when a record does not exist.
var ErrNotFound = errors.New("not found")

// ErrTooLarge is wrapped when content (a downloaded file, a request body) exceeds its size limit.
var ErrTooLarge = errors.New("too large")
