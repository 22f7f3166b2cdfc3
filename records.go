package echogate

import (
	"strings"
	"time"
)

// The record values below are what the stores persist. The interfaces that read and write them
// are declared by their consumers (pipeline.Store, memory.Store, knowledge.Store); storage/sqlite
// and storage/postgres implement them and storage/storagetest checks both alike.

// SessionInfo describes one conversation the gateway has seen.
type SessionInfo struct {
	Key          SessionKey      `json:"key"`
	Conversation ConversationRef `json:"conversation"`
	UserID       string          `json:"user_id"` // qualified id of the user who started it
	Ephemeral    bool            `json:"ephemeral"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

// StoredMessage is one transcript entry.
type StoredMessage struct {
	Seq     int64      `json:"seq"` // increasing within a session, assigned by the store
	Session SessionKey `json:"session"`
	Turn    string     `json:"turn"`
	Message Message    `json:"message"`
	At      time.Time  `json:"at"`
}

// TurnStatus is the state of a turn. The terminal ones mirror agent.Status.
type TurnStatus string

const (
	TurnRunning TurnStatus = "running"
	TurnDoneSt  TurnStatus = "done"
	TurnPaused  TurnStatus = "paused"
	TurnAborted TurnStatus = "aborted"
	TurnFailed  TurnStatus = "error"
	// TurnResumed is a paused turn whose pause was decided: the turn that resumed it carries on.
	TurnResumed TurnStatus = "resumed"
)

// TurnRecord is one turn: one inbound event handled through the three stages.
type TurnRecord struct {
	ID       string     `json:"id"`
	Session  SessionKey `json:"session"`
	EventKey string     `json:"event_key"` // InboundEvent.DedupeKey of the event that started it
	UserID   string     `json:"user_id"`
	// Agent names the agent profile (agents:) that served the turn; "default" for the top-level
	// agent. Set when the turn is created and never changed.
	Agent        string     `json:"agent,omitempty"`
	Status       TurnStatus `json:"status"`
	Model        string     `json:"model,omitempty"`
	RouteReason  string     `json:"route_reason,omitempty"`
	Error        string     `json:"error,omitempty"`
	InputTokens  int64      `json:"input_tokens"`
	OutputTokens int64      `json:"output_tokens"`
	// CachedInputTokens are the part of InputTokens the provider read from its prompt cache,
	// summed over the turn's model calls like InputTokens.
	CachedInputTokens int64     `json:"cached_input_tokens"`
	CostUSD           float64   `json:"cost_usd"`
	StartedAt         time.Time `json:"started_at"`
	EndedAt           time.Time `json:"ended_at,omitzero"`
	// Skills names the skills the turn loaded with the skill tool, in load order; set when the
	// turn ends (SPEC "Skills").
	Skills []string `json:"skills,omitempty"`
}

// JoinSkills is how stores keep TurnRecord.Skills in one text column: names joined by commas
// (a skill's name holds only lowercase letters, digits and hyphens).
func JoinSkills(names []string) string { return strings.Join(names, ",") }

// SplitSkills is JoinSkills' inverse; "" is nil.
func SplitSkills(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// TurnEnd is what the ResponseStage writes when a turn ends, in one store call
// (pipeline.TurnLog's FinishTurn): the new transcript messages, the turn record's final state,
// the last ledger entries and the completion of the event that started the turn.
type TurnEnd struct {
	Session  SessionKey
	Messages []Message  // appended under Turn.ID; may be empty
	Turn     TurnRecord // its final state: the mutable fields are updated (see UpdateTurn)
	EventKey string     // the event to mark completed; empty: none
	At       time.Time  // of the messages and the completion; zero: now
	// Usage are ledger entries to append (the turn's last model calls); FinishTurn sets their
	// IDs as RecordUsage returns them.
	Usage []UsageRecord
	// ReleaseSession says the end is the last write under the session's cross-replica lock: a
	// store that holds that lock (pipeline.SessionLocker) may give it back in the end's round
	// trip, once the end committed, and the lock's unlock then only forgets it. A store that
	// holds no such lock ignores it.
	ReleaseSession bool
}

// TurnResume is the durable decision on a paused turn: written together with the record of
// the turn that resumes it, in place of the pause (pipeline.TurnLog's ResumeTurn), so a crash
// during the resumed turn finds what it continues from and which of its effects happened.
type TurnResume struct {
	Turn      string      `json:"turn"` // the resuming turn
	Session   SessionKey  `json:"session"`
	Paused    PendingTurn `json:"paused"`    // the pause it replaces
	EventKey  string      `json:"event_key"` // the event that decided
	Decision  []byte      `json:"decision"`  // the decision as the agent reads it (JSON, opaque to stores)
	DecidedBy string      `json:"decided_by"`
	At        time.Time   `json:"at"`
	// The approved call's write-ahead: when it began (zero: not yet) and its result once
	// recorded (JSON, opaque to stores; nil: none). A call that began without a recorded
	// result is never run again.
	ToolStartedAt time.Time `json:"tool_started_at,omitzero"`
	ToolResult    []byte    `json:"tool_result,omitempty"`
}

// StopRequest is a stored stop of a session's running turn (pipeline.StopFlags).
type StopRequest struct {
	ID      int64      `json:"id"`
	Session SessionKey `json:"session"`
	Actor   string     `json:"actor"` // qualified id of who sent it ("slack:U123")
}

// UsageTrigger says what work caused a usage entry.
type UsageTrigger string

const (
	TriggerMessage       UsageTrigger = "message"
	TriggerConsolidation UsageTrigger = "consolidation"
	TriggerScheduled     UsageTrigger = "scheduled"
)

// UsageRecord is one ledger entry: a Usage attributed to its turn, session, user and channel.
type UsageRecord struct {
	ID      int64        `json:"id"` // assigned by the store
	Turn    string       `json:"turn,omitempty"`
	Session SessionKey   `json:"session,omitempty"`
	UserID  string       `json:"user_id,omitempty"` // qualified
	Channel string       `json:"channel,omitempty"` // platform:channel
	Agent   string       `json:"agent,omitempty"`   // the turn's agent profile; "" for background work
	Trigger UsageTrigger `json:"trigger"`
	Usage   Usage        `json:"usage"`
	At      time.Time    `json:"at"`
}

// UsageFilter selects ledger entries to sum. Empty fields match everything.
type UsageFilter struct {
	Turn    string
	Session SessionKey
	UserID  string
	Channel string
	Agent   string
	Since   time.Time // inclusive
	Until   time.Time // exclusive; zero means no upper bound
}

// ClaimedEvent is an inbound event recorded by the dispatcher and not yet completed.
type ClaimedEvent struct {
	Key       string    `json:"key"`
	Payload   []byte    `json:"payload"` // JSON of the InboundEvent
	ClaimedAt time.Time `json:"claimed_at"`
}

// PauseKind says what a paused turn waits for.
type PauseKind string

const (
	PauseApproval PauseKind = "approval"
	PauseAsk      PauseKind = "ask"
)

// PendingTurn is the persisted state of a paused turn: what resuming needs.
type PendingTurn struct {
	Session     SessionKey `json:"session"`
	Turn        string     `json:"turn"`
	Kind        PauseKind  `json:"kind"`
	CallID      string     `json:"call_id"`      // the tool call waiting for a decision or answer
	Tool        string     `json:"tool"`         // its tool name
	State       []byte     `json:"state"`        // serialized agent state (opaque to stores)
	Prompt      MessageRef `json:"prompt"`       // the approval prompt / question message
	RequestedBy string     `json:"requested_by"` // qualified id of the user whose turn paused
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   time.Time  `json:"expires_at,omitzero"` // zero: never
}

// ContextQuery is what a context provider (memory snapshot, knowledge hits) sees of a turn.
type ContextQuery struct {
	Session SessionKey
	UserID  string // qualified, e.g. "slack:U123"
	Channel string // platform:channel
	Text    string // the user's message
	Budget  int    // approximate tokens the section may use
}
