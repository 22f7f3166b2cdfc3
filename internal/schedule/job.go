package schedule

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Job is a scheduled job as the store keeps it. Config jobs (from `schedules:`) have ID
// ConfigID(Name); jobs created in chat have a random ID and an empty Name.
type Job struct {
	ID      string
	Name    string // config name; empty for chat jobs
	Owner   string // qualified user id ("slack:T1:U1"); a config job's is "config"
	Deliver string // delivery target: slack:C1[/ts], slack:dm:U1, discord:C1, discord:dm:U1, web:S, webhook:https://…
	Agent   string // agent profile; empty: the place's agent
	Prompt  string
	Spec    Spec
	// Session: "isolated" (a fresh conversation each run) or "shared" (one for the job).
	Session   string
	QuietIf   string  // an answer equal to it is recorded, not posted
	BudgetUSD float64 // per run; 0: the agent's and global budgets only
	CatchUp   CatchUp
	// MaxFailures pauses the job after that many consecutive failures; 0: never.
	MaxFailures int
	Paused      bool
	// Next is the job's cursor: its next slot not yet decided; zero when none is left.
	Next time.Time
	// NotBefore holds the job back after failures (Backoff); zero when not held back.
	NotBefore   time.Time
	Failures    int     // consecutive
	LastOutcome Outcome // of the last finished run
	LastError   string
	LastRunAt   time.Time // when the last run finished
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ConfigOwner owns the jobs of the config.
const ConfigOwner = "config"

// ConfigID is the ID of the config job name.
func ConfigID(name string) string { return "config:" + name }

// EventKey is the slot's key in the dispatcher's event dedupe: a second submission of a slot
// (recovery after a crash between Submit and MarkSubmitted) is a duplicate event.
func EventKey(jobID string, slot time.Time) string {
	return "schedule:" + jobID + ":" + strconv.FormatInt(slot.Unix(), 10)
}

// Outcome is how a run ended.
type Outcome string

// Outcomes (SPEC "Scheduled work").
const (
	OutcomeSkipped     Outcome = "skipped"     // the precheck said no: no model call
	OutcomeDelivered   Outcome = "delivered"   // the platform returned the message id
	OutcomeQuiet       Outcome = "quiet"       // the answer equalled quiet_if: recorded, not posted
	OutcomeFailed      Outcome = "failed"      // with the error
	OutcomeUnconfirmed Outcome = "unconfirmed" // the request went out and no answer came
	OutcomeBudget      Outcome = "budget"      // a budget stopped the run
	OutcomeDenied      Outcome = "denied"      // an unattended sensitive call was denied
)

// Valid reports whether o is one of the outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeSkipped, OutcomeDelivered, OutcomeQuiet, OutcomeFailed, OutcomeUnconfirmed, OutcomeBudget, OutcomeDenied:
		return true
	}
	return false
}

// Failure reports whether o counts towards MaxFailures. A skipped, quiet or delivered run
// resets the count; an unconfirmed one leaves it as it was (the answer may have arrived).
func (o Outcome) Failure() bool {
	return o == OutcomeFailed || o == OutcomeBudget || o == OutcomeDenied
}

// Run is one slot's record: claimed, then submitted, then finished.
type Run struct {
	JobID       string
	Slot        time.Time
	EventKey    string
	ClaimedBy   string // the worker (replica) that holds the claim
	ClaimedAt   time.Time
	SubmittedAt time.Time // zero: claimed, not submitted yet
	TurnID      string    // the run's turn, once finished
	Outcome     Outcome   // empty until finished
	Error       string
	FinishedAt  time.Time
}

// Claim is ClaimSlot's input: take Slot of JobID (unless Skip) and move the job's cursor
// from Cursor to Next (zero Next: no slot left).
type Claim struct {
	JobID  string
	Cursor time.Time // the cursor the decision was made on; the claim fails if it moved
	Next   time.Time
	Skip   bool // only move the cursor (every missed slot is skipped)
	Slot   time.Time
	By     string
	At     time.Time
}

// RunEnd is FinishRun's input.
type RunEnd struct {
	JobID   string
	Slot    time.Time
	TurnID  string
	Outcome Outcome
	Error   string
	At      time.Time
}

// Finished is FinishRun's answer: the job after the run, and whether this very call paused
// it (Failures reached MaxFailures): the caller posts the one alert exactly then.
type Finished struct {
	Job       Job
	PausedNow bool
	// Repeat: the run had finished before; nothing changed.
	Repeat bool
}

// JobStore keeps jobs. Every method blocks on I/O and honours ctx; a missing job wraps
// echogate.ErrNotFound.
type JobStore interface {
	// PutConfigJob creates or updates the config job j (by j.ID). An existing job keeps its
	// cursor, failures, pause and last outcome while j.Spec.Key() is unchanged; with a new
	// key its cursor becomes j.Next.
	PutConfigJob(ctx context.Context, j Job) error
	// CreateJob adds a chat job unless its owner has maxPerUser jobs with a slot left (or
	// paused) already: that fails wrapping ErrLimit. The check and the insert are atomic
	// across replicas. An existing ID fails.
	CreateJob(ctx context.Context, j Job, maxPerUser int) error
	GetJob(ctx context.Context, id string) (Job, error)
	// ListJobs lists owner's jobs (all jobs when owner is empty), by ID.
	ListJobs(ctx context.Context, owner string) ([]Job, error)
	// DeleteJob removes a job and its runs.
	DeleteJob(ctx context.Context, id string) error
	// SetPaused pauses or resumes a job. Resuming clears failures and back-off and sets the
	// cursor to next (a zero next keeps it).
	SetPaused(ctx context.Context, id string, paused bool, next time.Time, at time.Time) error
}

// SlotStore is the durable record of slots: claims, submissions, outcomes.
type SlotStore interface {
	// DueJobs lists enabled jobs whose cursor is at or before now and that are not held back
	// (NotBefore after now), earliest cursor first, at most limit.
	DueJobs(ctx context.Context, now time.Time, limit int) ([]Job, error)
	// NextDue returns the earliest cursor (or NotBefore, if later) of the enabled jobs; false
	// when none has a slot left.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// ClaimSlot records the run of c.Slot (unless c.Skip) and moves the job's cursor from
	// c.Cursor to c.Next, in one transaction. It returns false, writing nothing, when the job
	// is gone, paused, its cursor is no longer c.Cursor, or the slot was claimed before: of
	// any number of concurrent callers, on any replica, exactly one wins.
	ClaimSlot(ctx context.Context, c Claim) (bool, error)
	// MarkSubmitted records that the slot's trigger was handed over. Marking twice is not an
	// error; an unknown run wraps echogate.ErrNotFound.
	MarkSubmitted(ctx context.Context, jobID string, slot, at time.Time) error
	// ReclaimStale takes over runs claimed before staleBefore and never submitted (their
	// worker died between claim and submit): each becomes claimed by `by` at now, by exactly
	// one of concurrent callers. It returns the runs taken, at most limit.
	ReclaimStale(ctx context.Context, staleBefore time.Time, by string, now time.Time, limit int) ([]Run, error)
	// FinishRun records a run's outcome and updates its job in one transaction: LastOutcome,
	// LastError and LastRunAt; Failures +1 for a failure outcome (0 for a success, unchanged
	// for unconfirmed); NotBefore = e.At + Backoff(Failures) after a failure; and Paused once
	// Failures reaches MaxFailures (> 0). A run finished before is left as it was (Repeat).
	FinishRun(ctx context.Context, e RunEnd) (Finished, error)
	// ListRuns lists a job's runs, newest slot first, at most limit (<= 0: all).
	ListRuns(ctx context.Context, jobID string, limit int) ([]Run, error)
	// UnfinishedRuns lists runs submitted before `before` that have no outcome yet, oldest
	// submission first, at most limit: at start, the wiring finishes each from its turn's
	// record (found by the run's event key) when the process died between the turn's end and
	// FinishRun, so a run's outcome is never lost.
	UnfinishedRuns(ctx context.Context, before time.Time, limit int) ([]Run, error)
}

// Store is what scheduled work persists; storage/sqlite and storage/postgres implement it and
// storage/storagetest checks both.
type Store interface {
	JobStore
	SlotStore
}

// CheckJob validates a job before it is stored: its spec against lim, its catch-up policy
// and its fields. It returns the job with defaults filled and its first cursor set (the first
// slot after now) when j.Next is zero.
func CheckJob(j Job, lim Limits, now time.Time) (Job, error) {
	sch, err := Compile(j.Spec, lim, now)
	if err != nil {
		return j, err
	}
	if j.CatchUp, err = j.CatchUp.Validate(); err != nil {
		return j, err
	}
	switch {
	case j.ID == "":
		return j, fmt.Errorf("%w: job has no id", ErrInvalid)
	case j.Owner == "":
		return j, fmt.Errorf("%w: job %s: no owner", ErrInvalid, j.ID)
	case j.Prompt == "":
		return j, fmt.Errorf("%w: job %s: prompt is empty; say what the agent should do", ErrInvalid, j.ID)
	case j.BudgetUSD < 0:
		return j, fmt.Errorf("%w: job %s: budget_usd %v: must be >= 0", ErrInvalid, j.ID, j.BudgetUSD)
	case j.MaxFailures < 0:
		return j, fmt.Errorf("%w: job %s: max_failures %d: must be >= 0 (0: never pause)", ErrInvalid, j.ID, j.MaxFailures)
	}
	if _, err := ParseTarget(j.Deliver); err != nil {
		return j, fmt.Errorf("job %s: %w", j.ID, err)
	}
	switch j.Session {
	case "":
		j.Session = "isolated"
	case "isolated", "shared":
	default:
		return j, fmt.Errorf("%w: job %s: session %q: use isolated or shared", ErrInvalid, j.ID, j.Session)
	}
	if j.Next.IsZero() {
		n, ok := sch.Next(now)
		if !ok {
			return j, fmt.Errorf("%w: job %s: %s never fires after %s", ErrInvalid, j.ID, j.Spec.Key(), now.Format(time.RFC3339))
		}
		j.Next = n
	}
	return j, nil
}

// ApplyOutcome is job j after its run e ended at `at`: last outcome and error, the count of
// consecutive failures (+1 for a failure, reset by a success, kept by unconfirmed), the
// back-off after a failure, and the pause when the count reaches MaxFailures. pausedNow is
// true only for the run that paused it: its caller posts the one alert. Stores call it inside
// FinishRun's transaction.
func ApplyOutcome(j Job, e RunEnd, at time.Time) (_ Job, pausedNow bool) {
	j.LastOutcome, j.LastError, j.LastRunAt, j.UpdatedAt = e.Outcome, e.Error, at, at
	switch {
	case e.Outcome.Failure():
		j.Failures++
		j.NotBefore = at.Add(Backoff(j.Failures))
	case e.Outcome != OutcomeUnconfirmed:
		j.Failures, j.NotBefore = 0, time.Time{}
	}
	if !j.Paused && j.MaxFailures > 0 && j.Failures >= j.MaxFailures {
		j.Paused, pausedNow = true, true
	}
	return j, pausedNow
}
