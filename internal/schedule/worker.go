package schedule

import (
	"context"
	"errors"
	"fmt"
	"github.com/echogate/echogate/internal/clock"
	"log/slog"
	"sync"
	"time"
)

// Trigger is one slot handed to Submit: a turn whose trigger is the schedule. The job carries
// who acts (Owner), where the answer goes (Deliver), the agent, the prompt, the per-run budget,
// quiet_if and the session mode.
type Trigger struct {
	Job  Job
	Slot time.Time
	// EventKey identifies the slot to the dispatcher's event dedupe: submitting a slot again
	// (after a crash between Submit and MarkSubmitted) must be a duplicate, not a second run.
	EventKey string
	Lag      time.Duration // how late the slot was submitted (echogate_schedule_lag_seconds)
	// Recovered: the slot's claim was taken over from a worker that died before submitting.
	Recovered bool
	// Manual: a run asked for now (RunNow), outside the schedule.
	Manual bool
}

// Submit hands a trigger over, as an adapter hands an event to the dispatcher's sink. It
// must return quickly (it enqueues); nil means the slot's turn is durably accepted (its event
// claimed), so MarkSubmitted follows. An error, unless ctx ended, finishes the run as failed.
type Submit func(ctx context.Context, t Trigger) error

// Clock is the worker's time source (the project's one, internal/clock); tests inject a fake.
type Clock = clock.Clock

// SystemClock is the real clock.
type SystemClock = clock.System

// Config configures a Worker. The zero value means the defaults.
type Config struct {
	// Replica names this worker in its claims (default "local").
	Replica string
	// MaxConcurrent bounds the submissions in flight (default 4).
	MaxConcurrent int
	// Batch bounds the jobs claimed per pass (default 64).
	Batch int
	// Grace is how late a slot may start and still be on time (default DefaultGrace).
	Grace time.Duration
	// StaleAfter: a claim not submitted for that long is taken over (default 2m).
	StaleAfter time.Duration
	// MaxWait bounds the sleep between passes while nothing is due, so jobs other replicas
	// create are seen (default 30s).
	MaxWait time.Duration
	// OnPause, when set, is called when a run this worker finished (a failed submit) paused
	// its job: post the one alert to the job's delivery place there. The wiring's own
	// FinishRun at a turn's end reports the same through Finished.PausedNow.
	OnPause func(ctx context.Context, j Job)
}

func (c Config) withDefaults() Config {
	if c.Replica == "" {
		c.Replica = "local"
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 4
	}
	if c.Batch <= 0 {
		c.Batch = 64
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = 2 * time.Minute
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 30 * time.Second
	}
	return c
}

// minWait keeps a pass whose work keeps failing from spinning.
const minWait = time.Second

// Worker claims due slots through a Store and submits them. One per process; any number of
// replicas may run one on the same database.
type Worker struct {
	cfg    Config
	st     Store
	submit Submit
	clock  Clock
	log    *slog.Logger
	wake   chan struct{}
}

// NewWorker validates its arguments; it does no I/O.
func NewWorker(cfg Config, st Store, submit Submit, clock Clock, log *slog.Logger) (*Worker, error) {
	if st == nil || submit == nil {
		return nil, errors.New("schedule: new worker: a store and a submit function are required")
	}
	if clock == nil {
		clock = SystemClock{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{cfg: cfg.withDefaults(), st: st, submit: submit, clock: clock, log: log, wake: make(chan struct{}, 1)}, nil
}

// Wake makes a running worker look at the store now (a job was created, resumed or changed).
// It never blocks.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run passes over the store until ctx ends: after each pass it sleeps until the next job is due
// (at most MaxWait, at least a second) or Wake. It returns nil when ctx ends, after every
// submission it started has returned.
func (w *Worker) Run(ctx context.Context) error {
	for {
		st, err := w.Tick(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("schedule: pass failed", "err", err)
		}
		if err == nil && st.Claimed+st.Skipped >= w.cfg.Batch {
			continue // more may be due than one pass takes
		}
		wait := w.cfg.MaxWait
		if next, ok, err := w.st.NextDue(ctx); err == nil && ok {
			wait = min(wait, max(next.Sub(w.clock.Now()), minWait))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-w.clock.After(wait):
		}
	}
}

// Stats counts what a pass did.
type Stats struct {
	Claimed, Skipped, Recovered, Submitted, Failed int
}

// Tick is one pass: take over stale claims, decide and claim every due job's slot, submit the
// claimed slots (at most MaxConcurrent at once) and record each submission. It returns after
// every submission it started has returned.
func (w *Worker) Tick(ctx context.Context) (Stats, error) {
	now := w.clock.Now()
	var st Stats
	var trigs []Trigger
	stale, err := w.st.ReclaimStale(ctx, now.Add(-w.cfg.StaleAfter), w.cfg.Replica, now, w.cfg.Batch)
	if err != nil {
		return st, fmt.Errorf("schedule: reclaim stale claims: %w", err)
	}
	for _, r := range stale {
		j, err := w.st.GetJob(ctx, r.JobID)
		if err != nil {
			w.log.Warn("schedule: a reclaimed slot's job is gone", "job", r.JobID, "err", err)
			continue
		}
		st.Recovered++
		trigs = append(trigs, Trigger{Job: j, Slot: r.Slot, EventKey: r.EventKey, Lag: now.Sub(r.Slot), Recovered: true})
	}
	due, err := w.st.DueJobs(ctx, now, w.cfg.Batch)
	if err != nil {
		return st, fmt.Errorf("schedule: due jobs: %w", err)
	}
	var errs []error
	for _, j := range due {
		t, ok, err := w.claim(ctx, j, now)
		if err != nil {
			errs = append(errs, err) // the slots claimed so far are still submitted
			continue
		}
		switch {
		case ok:
			st.Claimed++
			trigs = append(trigs, t)
		case t.Job.ID != "":
			st.Skipped++
		}
	}
	sub, failed := w.submitAll(ctx, trigs)
	st.Submitted, st.Failed = sub, failed
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// claim decides job j's due slot and claims it. ok reports a slot to submit; a returned
// trigger with ok false and a job id means the cursor moved past missed slots only.
func (w *Worker) claim(ctx context.Context, j Job, now time.Time) (Trigger, bool, error) {
	sch, err := Of(j.Spec)
	if err != nil {
		// A stored spec that no longer compiles (a zone gone from the time zone database):
		// pause the job rather than find it due on every pass.
		w.log.Error("schedule: pausing a job whose schedule no longer compiles", "job", j.ID, "err", err)
		return Trigger{}, false, w.st.SetPaused(ctx, j.ID, true, time.Time{}, now)
	}
	d := Decide(sch, j.Next, now, j.CatchUp, w.cfg.Grace)
	won, err := w.st.ClaimSlot(ctx, Claim{JobID: j.ID, Cursor: j.Next, Next: d.Next, Skip: !d.Run, Slot: d.Slot, By: w.cfg.Replica, At: now})
	if err != nil {
		return Trigger{}, false, fmt.Errorf("schedule: claim %s: %w", j.ID, err)
	}
	if !won {
		return Trigger{}, false, nil // another worker decided this cursor
	}
	if !d.Run {
		w.log.Info("schedule: missed slots skipped by catch-up", "job", j.ID, "cursor", j.Next, "next", d.Next)
		return Trigger{Job: j}, false, nil
	}
	j.Next = d.Next
	return Trigger{Job: j, Slot: d.Slot, EventKey: EventKey(j.ID, d.Slot), Lag: now.Sub(d.Slot)}, true, nil
}

// submitAll submits trigs, at most MaxConcurrent at once, and records each outcome.
func (w *Worker) submitAll(ctx context.Context, trigs []Trigger) (submitted, failed int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, w.cfg.MaxConcurrent)
	for _, t := range trigs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return submitted, failed
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ok := w.submitOne(ctx, t)
			mu.Lock()
			if ok {
				submitted++
			} else {
				failed++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return submitted, failed
}

// submitOne submits t and records it: submitted, or finished as failed. When ctx ends first
// the claim stays unsubmitted, for ReclaimStale.
func (w *Worker) submitOne(ctx context.Context, t Trigger) bool {
	err := w.callSubmit(ctx, t)
	if ctx.Err() != nil {
		return false
	}
	now := w.clock.Now()
	if err == nil {
		if err := w.st.MarkSubmitted(ctx, t.Job.ID, t.Slot, now); err != nil {
			w.log.Warn("schedule: mark submitted", "job", t.Job.ID, "slot", t.Slot, "err", err)
		}
		return true
	}
	w.log.Warn("schedule: submit failed", "job", t.Job.ID, "slot", t.Slot, "err", err)
	f, ferr := w.st.FinishRun(ctx, RunEnd{JobID: t.Job.ID, Slot: t.Slot, Outcome: OutcomeFailed, Error: "submit: " + err.Error(), At: now})
	if ferr != nil {
		w.log.Warn("schedule: record failed submit", "job", t.Job.ID, "err", ferr)
	}
	if f.PausedNow && w.cfg.OnPause != nil {
		w.cfg.OnPause(ctx, f.Job)
	}
	return false
}

// callSubmit calls Submit, turning a panic into an error.
func (w *Worker) callSubmit(ctx context.Context, t Trigger) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("submit panicked: %v", p)
		}
	}()
	return w.submit(ctx, t)
}

// RunNow claims and submits a slot of job id at the current second, once, outside its
// schedule (`echogate schedule run`, POST /api/schedules/{id}/run). The job's cursor stays,
// unless the slot is the cursor itself, which then moves on. A paused job is refused.
func (w *Worker) RunNow(ctx context.Context, id string) (Trigger, error) {
	j, err := w.st.GetJob(ctx, id)
	if err != nil {
		return Trigger{}, fmt.Errorf("schedule: run %s now: %w", id, err)
	}
	if j.Paused {
		return Trigger{}, fmt.Errorf("schedule: run %s now: the job is paused; resume it first", id)
	}
	now := w.clock.Now()
	slot := now.Truncate(time.Second).UTC()
	cursor, next := j.Next, j.Next
	if cursor.IsZero() {
		return Trigger{}, fmt.Errorf("schedule: run %s now: the job has no slot left (a one-shot that ran); create a new one", id)
	}
	if slot.Equal(cursor) {
		sch, err := Of(j.Spec)
		if err != nil {
			return Trigger{}, fmt.Errorf("schedule: run %s now: %w", id, err)
		}
		next, _ = sch.Next(slot)
	}
	won, err := w.st.ClaimSlot(ctx, Claim{JobID: id, Cursor: cursor, Next: next, Slot: slot, By: w.cfg.Replica, At: now})
	if err != nil {
		return Trigger{}, fmt.Errorf("schedule: run %s now: %w", id, err)
	}
	if !won {
		return Trigger{}, fmt.Errorf("schedule: run %s now: the slot %s was taken (a run this second, or the job changed); try again", id, slot.Format(time.RFC3339))
	}
	j.Next = next
	t := Trigger{Job: j, Slot: slot, EventKey: EventKey(id, slot), Manual: true}
	if !w.submitOne(ctx, t) {
		if err := ctx.Err(); err != nil {
			return t, fmt.Errorf("schedule: run %s now: %w (the claim is taken over after StaleAfter)", id, err)
		}
		return t, fmt.Errorf("schedule: run %s now: submit failed (recorded as the run's outcome)", id)
	}
	return t, nil
}
