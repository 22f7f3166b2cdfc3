package pipeline

import (
	"context"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
)

// Store is what the pipeline persists. storage/sqlite and storage/postgres implement it;
// storage/storagetest checks both with one suite.
//
// Every method blocks on I/O, honours ctx cancellation (returning ctx.Err() wrapped) and is safe for
// concurrent use. Not-found results are reported with ErrNotFound from the store's package wrapped
// so that errors.Is(err, echogate.ErrNotFound) holds.
type Store interface {
	EventStore
	SessionStore
	TurnLog
	UsageStore
	PendingStore
}

// EventStore is the dispatcher's dedupe record: the arbiter of "each event answered once".
type EventStore interface {
	// ClaimEvent records key as received. It returns true for the first claim of key and false
	// for every later one (the event is a duplicate), also across restarts and replicas.
	ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error)
	// CompleteEvent marks a claimed event as handled. Completing twice is not an error.
	CompleteEvent(ctx context.Context, key string, at time.Time) error
	// UnfinishedEvents lists claimed, not completed events claimed before `before`, oldest first
	// (replayed after a restart so that nothing is lost).
	UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error)
	// ReopenEvent marks a completed event unfinished again: recovery found it completed while
	// its turn's end was lost (a store whose event log and transcript commit apart).
	ReopenEvent(ctx context.Context, key string) error
}

// SessionStore keeps sessions and their transcripts.
type SessionStore interface {
	// UpsertSession creates the session or bumps its UpdatedAt.
	UpsertSession(ctx context.Context, s echogate.SessionInfo) error
	GetSession(ctx context.Context, key echogate.SessionKey) (echogate.SessionInfo, error)
	ListSessions(ctx context.Context, limit int) ([]echogate.SessionInfo, error) // newest first
	// DeleteSession removes the session, its transcript, pending state and grants (the usage
	// ledger is kept: money spent stays on the books).
	DeleteSession(ctx context.Context, key echogate.SessionKey) error
	// AppendMessages appends to the transcript in order, assigning Seq: one more than the
	// session's last entry for each (FinishTurn appends its Messages the same way). The history
	// cache numbers the entries it writes through so (histthrough.go).
	AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error
	// History returns the last `limit` transcript entries, oldest first.
	History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error)
	// HistorySince returns the transcript entries after `after`, an entry the caller read
	// earlier (its Seq, Turn and At are compared), oldest first. ok is false, with no entries,
	// when the session's entry at after.Seq is no longer that entry (the session was deleted,
	// and perhaps started again) or when more than `limit` entries follow it (limit > 0): the
	// caller reloads with History. It lets the pipeline keep recent transcripts in memory and
	// read only what was appended since.
	HistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int) (entries []echogate.StoredMessage, ok bool, err error)
	// GrantTool records "approve this tool for the session" for user (qualified id), decided
	// by by; Grants maps the tools granted to user in the session to who granted each. A grant
	// is one person's.
	GrantTool(ctx context.Context, key echogate.SessionKey, user, tool, by string, at time.Time) error
	Grants(ctx context.Context, key echogate.SessionKey, user string) (map[string]string, error)
}

// TurnLog is the durable record of each turn's lifecycle, owned by storage: a turn begins
// with its input (BeginTurn, status running), its usage is recorded (UsageStore.RecordUsage),
// a pause saved (PendingStore.SavePending), a decision resumes it (ResumeTurn), the approved
// call's start and result are recorded (RecordToolRun), and it ends (FinishTurn). The write
// order, batching and group commit live inside the store; the pipeline has this one path
// whatever the backend.
//
// Write-ahead: every transition that guards an effect is durable when its call returns, and
// carries the key recovery looks for: the turn's id is the reply id its answer is posted
// under (the record exists before the post), the resumed turn exists before the pause is
// gone, the approved call's start before it runs.
type TurnLog interface {
	// BeginTurn begins a turn: it writes b.Record (status running) and b.Input in the order the
	// store chooses and returns at once, with the handle the turn waits on (internal/turnstart:
	// Durable before an effect that needs the start written, Fold at the end). Both stores
	// write the record at once and defer the input to fold it into FinishTurn (PostgreSQL
	// writes the record in the round trip of the context's reads). A failed write is told to
	// b.Owner. The pipeline calls nothing else to start a turn.
	BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start
	CreateTurn(ctx context.Context, t echogate.TurnRecord) error
	// UpdateTurn overwrites the mutable fields (status, model, reason, error, tokens, cost, end).
	UpdateTurn(ctx context.Context, t echogate.TurnRecord) error
	GetTurn(ctx context.Context, id string) (echogate.TurnRecord, error)
	ListTurns(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.TurnRecord, error) // newest first; empty key = all sessions
	// ResumeTurn replaces the session's pause of turn r.Paused.Turn by the decision r and the
	// record of the turn that resumes it (rec, status running), in one transaction; the paused
	// turn's record becomes TurnResumed (also when it still shows running: a crash came after
	// its pause was saved, before its end was written). When the session has no such pause (another replica
	// decided first, the pause was cancelled) nothing is written and the error wraps
	// echogate.ErrNotFound.
	ResumeTurn(ctx context.Context, r echogate.TurnResume, rec echogate.TurnRecord) error
	// GetResume returns the resume record written by the event eventKey, until its turn ends
	// (FinishTurn removes it); else an error wrapping echogate.ErrNotFound.
	GetResume(ctx context.Context, eventKey string) (echogate.TurnResume, error)
	// RecordToolRun records the approved call of the resumed turn `turn`: begun (result nil)
	// or its result. An unknown turn wraps echogate.ErrNotFound.
	RecordToolRun(ctx context.Context, turn, callID string, result []byte, at time.Time) error
	// FinishTurn writes a turn's end in one call: it appends end.Messages, updates end.Turn
	// (as UpdateTurn), records end.Usage (setting their IDs), removes the turn's resume
	// record, and completes end.EventKey. A store that cannot commit them atomically (SQLite's
	// two files) may leave either without the other after a crash: the pipeline reconciles a
	// completed event whose turn still runs at start (ReopenEvent), and a replayed event whose
	// turn ended is only completed. The parts succeed or fail on their own: a
	// turn record that cannot be written must not keep the transcript from being saved or the
	// event from being completed. The error joins the parts' errors.
	FinishTurn(ctx context.Context, end echogate.TurnEnd) error
	// RecordProgress appends msgs under turn (as AppendMessages) and records the ledger
	// entries usage (as RecordUsage, setting their IDs) in one transaction: both are written
	// or neither. A turn calls it when the model first asks for a tool, so the question and
	// the spend so far share one commit.
	RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error
	// RecordPosting records ref as the message the streamed answer of turn was created as,
	// as soon as the platform created it and before more of the answer is shown: recovery
	// edits that message into the full answer instead of posting a second one. It replaces an
	// earlier reference of the turn. An unknown turn wraps echogate.ErrNotFound.
	RecordPosting(ctx context.Context, turn string, ref echogate.MessageRef) error
	// GetPosting returns what RecordPosting recorded for turn; a zero ref when nothing was.
	// An unknown turn wraps echogate.ErrNotFound.
	GetPosting(ctx context.Context, turn string) (echogate.MessageRef, error)
}

// UsageStore is the cost ledger.
type UsageStore interface {
	RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error)
	SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error) // tokens and CostUSD summed
	ListUsage(ctx context.Context, f echogate.UsageFilter, limit int) ([]echogate.UsageRecord, error)
}

// PendingStore keeps paused turns (approval, ask_user) across restarts. One per session.
type PendingStore interface {
	SavePending(ctx context.Context, p echogate.PendingTurn) error // replaces the session's pending turn
	GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error)
	// DeletePending removes the session's pending turn; it returns an error wrapping
	// echogate.ErrNotFound when there was none, so of two concurrent resumers exactly one wins.
	DeletePending(ctx context.Context, key echogate.SessionKey) error
	ListPending(ctx context.Context, limit int) ([]echogate.PendingTurn, error) // oldest first
	// PendingByPrompt returns the paused turn whose prompt is the message ref, so a reaction on
	// a prompt finds its session from the store (after a restart, on any replica) before the
	// platform's API is asked; ErrNotFound when none.
	PendingByPrompt(ctx context.Context, ref echogate.MessageRef) (echogate.PendingTurn, error)
}

// StopFlags is implemented by stores shared by replicas (PostgreSQL): a stop for a session
// whose turn may run on another replica is stored, and every replica polls for new ones
// (stopPollInterval), so the replica running the turn stops it within a second.
type StopFlags interface {
	// RequestStop stores a stop of the session's running turn sent by actor (a qualified id);
	// the replica running the turn applies the same rule as to a stop it receives itself.
	RequestStop(ctx context.Context, key echogate.SessionKey, actor string) error
	// RecentStops lists the stops stored within the last window, by the store's clock,
	// oldest first; a stop is seen by several polls and told apart by its ID.
	RecentStops(ctx context.Context, window time.Duration) ([]echogate.StopRequest, error)
}

// PendingLocker is implemented by a SessionLocker that reads the session's paused turn in the
// round trip that takes the session's lock, after the lock is held (PostgreSQL: one batch). An
// event then pays one round trip for both, where TryLockSession and GetPending cost two on its
// critical path. pend is nil when the session has no paused turn, and always when ok is false.
type PendingLocker interface {
	// With event set, done reports (in the same round trip) whether that event was completed
	// already: another replica took it over and answered it while it waited here for the lock.
	TryLockSessionPending(ctx context.Context, key echogate.SessionKey, event string) (unlock func(), ok bool, pend *echogate.PendingTurn, done bool, err error)
}

// ClaimLocker is implemented by a PendingLocker that claims an event and takes its session's
// lock, with the paused-turn read, in one round trip (PostgreSQL on a direct connection: one
// batch). Submit uses it for an event whose session is idle in this process: the event's claim
// and its turn's lock then cost one round trip on its critical path, not two.
type ClaimLocker interface {
	// ClaimEventLocking claims key as ClaimEvent does. When the claim is the first it also
	// tries session's lock in the same round trip, as TryLockSessionPending does: locked
	// reports whether it was taken, unlock (never nil) releases it, and pend is the paused
	// turn read with it. A claim that is not the first takes no lock. An error means nothing
	// was claimed and no lock is held.
	ClaimEventLocking(ctx context.Context, key string, payload []byte, at time.Time, session echogate.SessionKey) (first bool, unlock func(), locked bool, pend *echogate.PendingTurn, err error)
}

// ClaimRenewer is implemented by stores shared by replicas (PostgreSQL). With ReplayAfter set,
// every replica's janitor takes over the events whose claim is older than that (EventReclaimer);
// the replica that holds an event — queued in a mailbox, waiting for its session's lock, or
// answered by a running turn — renews its claim so that none is taken from a live replica,
// however long it waits (renew.go). A replica that dies stops renewing: its events are taken
// over ReplayAfter after its last renewal.
type ClaimRenewer interface {
	// RenewClaims moves the claim time (ClaimEvent's at) of each event in keys that is not
	// completed to about now, so UnfinishedEvents(before) leaves it out for any before up to
	// now. keys come oldest first and keep that order: the i-th of n is stamped
	// now − (n−1−i) µs, so a later takeover replays a session's events in the order they were
	// queued. Completed and unknown keys are left alone; an empty list does nothing (no round
	// trip). It returns how many events it renewed. It blocks on I/O — one statement per
	// bounded chunk of keys — and honours ctx (the error wraps ctx.Err()); after an error the
	// chunks sent before it stay renewed.
	RenewClaims(ctx context.Context, keys []string, now time.Time) (int64, error)
}
