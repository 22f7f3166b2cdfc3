// Package echogate holds the values every layer of the gateway shares: inbound events, outbound
// messages, conversation and message references, transcript messages, usage and turn events.
//
// It imports only the standard library and holds values (plus the one Stream method set that both
// channels and the pipeline must name). Behaviour lives in the packages below cmd/.
package echogate

import (
	"strings"
	"time"
)

// Platform names used in ConversationRef.Platform and MessageRef.Platform.
const (
	PlatformSlack   = "slack"
	PlatformDiscord = "discord"
	PlatformWeb     = "web"
	PlatformConsole = "console"
)

// EventKind says what an InboundEvent is. Adapters decide it; the pipeline acts on it.
type EventKind uint8

const (
	// KindMessage is room chatter that was not addressed to the bot. Adapters normally drop it
	// before it reaches the pipeline; it exists so a policy can decide explicitly.
	KindMessage EventKind = iota
	// KindDirect is a direct message to the bot (Slack IM, Discord DM, web, console).
	KindDirect
	// KindMention addresses the bot in a shared room: an @-mention, a reply to the bot, or a
	// follow-up in a thread the bot is in when mentions are not required.
	KindMention
	// KindReaction is an emoji reaction added to one of the bot's own messages.
	KindReaction
)

func (k EventKind) String() string {
	switch k {
	case KindMessage:
		return "message"
	case KindDirect:
		return "direct"
	case KindMention:
		return "mention"
	case KindReaction:
		return "reaction"
	}
	return "unknown"
}

// Canonical reaction emoji. Adapters map platform names (Slack "white_check_mark") to these.
const (
	ReactionApprove        = "✅"
	ReactionApproveSession = "🔁"
	ReactionDeny           = "❌"
	ReactionStop           = "🛑"
	ReactionWorking        = "👀"
)

// Actor is who caused an event.
type Actor struct {
	ID     string // platform user id (Slack U…, Discord snowflake, web/console user name)
	Name   string // display name when known; informational only
	IsBot  bool   // another bot or an integration
	IsSelf bool   // this gateway's own bot user
	// Team is the person's own workspace when the platform says it may differ from the
	// conversation's (Slack's user_team: a Slack Connect guest's home organisation); empty
	// means the conversation's workspace. access.workspaces checks both.
	Team string `json:",omitempty"`
}

// QualifiedID is the actor id prefixed with the platform, e.g. "slack:U123": the form used in
// approver lists and memory ownership.
func (a Actor) QualifiedID(platform string) string { return platform + ":" + a.ID }

// ConversationRef locates a conversation on a platform.
type ConversationRef struct {
	Platform  string // PlatformSlack, PlatformDiscord, …
	Workspace string // Slack team id, Discord guild id (empty for DMs); informational
	Channel   string // channel / DM id; for web and console the session id
	Thread    string // Slack thread_ts, Discord thread channel id; empty when not threaded
	DM        bool   // a one-to-one conversation with the bot
}

// SessionKey names one conversation: one turn at a time runs per key.
type SessionKey string

// SessionKey derives the default session for a conversation: a thread is one session, a channel or
// DM without a thread is one session.
func (c ConversationRef) SessionKey() SessionKey {
	var b strings.Builder
	b.Grow(len(c.Platform) + len(c.Channel) + len(c.Thread) + 2)
	b.WriteString(c.Platform)
	b.WriteByte(':')
	b.WriteString(c.Channel)
	if c.Thread != "" {
		b.WriteByte(':')
		b.WriteString(c.Thread)
	}
	return SessionKey(b.String())
}

// MessageRef locates one posted message.
type MessageRef struct {
	Platform string
	Channel  string
	ID       string // Slack ts, Discord message id, web/console sequence
}

// IsZero reports whether the reference is empty.
func (m MessageRef) IsZero() bool { return m.ID == "" }

// Attachment is a file attached to an inbound message. The content is fetched lazily by the
// channel that produced it.
type Attachment struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	MIME string `json:"mime,omitempty"`
	Size int64  `json:"size,omitempty"`
	URL  string `json:"url,omitempty"` // platform URL; may need the bot token to download
}

// InboundEvent is one normalized platform event. It is a value: adapters build it, the dispatcher
// dedupes it by (Conversation.Platform, ID) and queues it for its session.
type InboundEvent struct {
	// ID is the platform's stable id for this delivery: Slack event_id (or channel+ts), Discord
	// message id, a web request id. The same post delivered twice carries the same ID.
	ID           string
	Kind         EventKind
	Conversation ConversationRef
	// Session overrides Conversation.SessionKey() when set (e.g. `chat --session`).
	Session SessionKey
	Actor   Actor
	Text    string     // user text with the bot's mention markup removed
	Message MessageRef // the inbound message itself (thread parent for replies)
	// Reaction and Target are set for KindReaction: the canonical emoji and the message it was
	// added to.
	Reaction    string
	Target      MessageRef
	Attachments []Attachment
	ReceivedAt  time.Time
	// Ephemeral marks a one-shot session: it is deleted after the answer (e.g. `chat -m`
	// without --session).
	Ephemeral bool
	// AutoApprove approves every approval request of the turns this event starts (`chat
	// --approve`). Adapters must never set it from platform input.
	AutoApprove bool
	// ThreadContext holds the earlier messages of the thread (oldest first) when the bot is
	// first addressed inside an existing thread or reply chain. The pipeline gives them to the
	// model before Text, once: they are saved with the user's message, so later turns read them
	// from the store.
	ThreadContext []ThreadMessage `json:",omitempty"`
	// Interaction is set by adapters for events that came as an interaction (a slash or
	// application command): an opaque token through which the channel answers privately. The
	// pipeline copies it into Outbound.Interaction of the replies to this event.
	Interaction string `json:",omitempty"`
	// Scheduled is set on the event of a scheduled run: its trigger is a job's slot, not a
	// message; Actor is the job's owner and Text its prompt. Adapters never set it.
	Scheduled *ScheduledRun `json:",omitempty"`
}

// ScheduledRun is what a scheduled run's turn carries besides its prompt (SPEC "Scheduled
// work"): which job and slot, the per-run budget, the quiet answer, the agent, and what a
// sensitive tool call does with nobody watching.
type ScheduledRun struct {
	Job       string    // the job's id
	Slot      time.Time // the scheduled instant
	BudgetUSD float64   `json:",omitempty"` // per run; 0: the agent's and global budgets only
	QuietIf   string    `json:",omitempty"` // an answer equal to it is recorded, not posted
	Agent     string    `json:",omitempty"` // the agent profile; empty: the place's
	// Unattended is approval.unattended: "prompt" posts the approval prompt to the delivery
	// place; anything else ("deny", the default) refuses a call that would ask.
	Unattended string `json:",omitempty"`
	// Config marks a job of the config (`schedules:`): its actor is not a person, so the access
	// rules (who may use the gateway) do not apply to it.
	Config bool `json:",omitempty"`
}

// SessionKey returns the event's session. InboundEvent's methods take it by pointer: it is a few
// hundred bytes, and a turn calls them on frames that every model call runs on top of.
func (e *InboundEvent) SessionKey() SessionKey {
	if e.Session != "" {
		return e.Session
	}
	return e.Conversation.SessionKey()
}

// DedupeKey is the key under which the event is recorded as processed.
func (e *InboundEvent) DedupeKey() string { return e.Conversation.Platform + ":" + e.ID }

// OutboundKind says what an Outbound message is, so channels can prioritise and render it.
type OutboundKind uint8

const (
	OutReply          OutboundKind = iota // the answer of a turn
	OutApprovalPrompt                     // asks for approval; channels add the approval reactions
	OutNotice                             // a short system notice (budget hit, fallback text, stopped)
	OutPlan                               // the visible plan of a long task, updated in place
)

// Outbound is one message the gateway posts.
type Outbound struct {
	Kind         OutboundKind
	Conversation ConversationRef
	// ReplyTo is the inbound message being answered; channels thread under it where the
	// platform has threads.
	ReplyTo MessageRef
	Text    string // Markdown; channels convert to their markup
	// Reactions are added by the channel to the posted message (approval prompts).
	Reactions []string
	// Session and Turn identify the turn for channels that show it (web console).
	Session SessionKey
	Turn    string
	// Interaction answers the interaction an event came with (InboundEvent.Interaction): the
	// channel replies privately to the user who invoked it (Slack ephemeral, Discord ephemeral
	// follow-up) instead of posting in the conversation.
	Interaction string
	// PrivateTo, when set (the recipient's platform user id), asks for the message to be shown
	// to that person only, where the platform can without an interaction (Slack's ephemeral
	// messages); elsewhere it is posted in the conversation as usual.
	PrivateTo string
	// Continues is a message an interrupted turn had started streaming (its partial answer):
	// StartStream shows this reply in that message, edited into the new text, instead of
	// posting a new one. Zero: a new message.
	Continues MessageRef
	// Choices are offered as buttons under the message (Slack Block Kit, Discord components),
	// for a question the pipeline puts to a person during a tool call. A press comes back as an
	// InboundEvent of KindReaction whose Reaction is the pressed choice's Value and whose Target
	// is the message. Channels without buttons show the text alone.
	Choices []Choice `json:",omitempty"`
}

// Choice is one button of Outbound.Choices: Value comes back in InboundEvent.Reaction (at most
// 80 bytes, so that it fits every platform's button id), Label is shown.
type Choice struct {
	Value, Label string
}
