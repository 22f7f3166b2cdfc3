package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// Scheduled work's jobs (schedule.JobStore); slots are in schedule_runs.go.

const schedJobCols = `id, name, owner, deliver, agent, prompt, cron, timezone, every_s, at, session, quiet_if,
budget_usd, catch_up, max_lateness_s, max_failures, paused, next_at, not_before, failures, last_outcome,
last_error, last_run_at, created_at, updated_at`

const qInsertSchedJob = `INSERT INTO schedule_jobs (id, name, owner, deliver, agent, prompt, cron, timezone, every_s, at,
session, quiet_if, budget_usd, catch_up, max_lateness_s, max_failures, paused, next_at, spec_key, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// qPutConfigJob keeps the cursor, failures, pause and last outcome while the spec is unchanged.
const qPutConfigJob = qInsertSchedJob + `
ON CONFLICT (id) DO UPDATE SET name = excluded.name, owner = excluded.owner, deliver = excluded.deliver,
agent = excluded.agent, prompt = excluded.prompt, cron = excluded.cron, timezone = excluded.timezone,
every_s = excluded.every_s, at = excluded.at, session = excluded.session, quiet_if = excluded.quiet_if,
budget_usd = excluded.budget_usd, catch_up = excluded.catch_up, max_lateness_s = excluded.max_lateness_s,
max_failures = excluded.max_failures,
next_at = CASE WHEN schedule_jobs.spec_key = excluded.spec_key THEN schedule_jobs.next_at ELSE excluded.next_at END,
spec_key = excluded.spec_key, updated_at = excluded.updated_at`

const qCountActiveJobs = `SELECT count(*) FROM schedule_jobs WHERE owner = ? AND next_at IS NOT NULL`

func schedJobArgs(j schedule.Job, at time.Time) []any {
	return []any{j.ID, j.Name, j.Owner, j.Deliver, j.Agent, j.Prompt, j.Spec.Cron, j.Spec.Timezone,
		int64(j.Spec.Every / time.Second), optMicros(j.Spec.At), j.Session, j.QuietIf, j.BudgetUSD, j.CatchUp.Policy,
		int64(j.CatchUp.MaxLateness / time.Second), int64(j.MaxFailures), boolInt(j.Paused), optMicros(j.Next),
		j.Spec.Key(), toMicros(at), toMicros(at)}
}

func checkSchedJob(op string, j schedule.Job) error {
	if j.ID == "" || j.Owner == "" {
		return fmt.Errorf("sqlite: %s: %w: a job needs an id and an owner", op, ErrInvalid)
	}
	return nil
}

// PutConfigJob creates or updates a config job; see schedule.JobStore.
func (s *Store) PutConfigJob(ctx context.Context, j schedule.Job) error {
	if err := checkSchedJob("put schedule job", j); err != nil {
		return err
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: put schedule job %q: %w", j.ID, err)
	}
	args := schedJobArgs(j, s.stamp(j.UpdatedAt))
	if err := d.write(ctx, func(tx *wtx) error { _, err := tx.exec(qPutConfigJob, args...); return err }); err != nil {
		return fail(ctx, err, "put schedule job %q", j.ID)
	}
	return nil
}

// CreateJob adds a chat job within its owner's limit; see schedule.JobStore. The count and the
// insert run in one transaction of the single writer, so concurrent creates cannot both pass.
func (s *Store) CreateJob(ctx context.Context, j schedule.Job, maxPerUser int) error {
	if err := checkSchedJob("create schedule job", j); err != nil {
		return err
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: create schedule job %q: %w", j.ID, err)
	}
	args := schedJobArgs(j, s.stamp(j.CreatedAt))
	var n int64
	err = d.write(ctx, func(tx *wtx) error {
		if maxPerUser > 0 {
			if err := tx.queryRow(qCountActiveJobs, []any{j.Owner}, &n); err != nil {
				return err
			}
			if n >= int64(maxPerUser) {
				return fmt.Errorf("%w: %s has %d scheduled jobs (scheduler.max_per_user %d); cancel one first", schedule.ErrLimit, j.Owner, n, maxPerUser)
			}
		}
		_, err := tx.exec(qInsertSchedJob, args...)
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: job %q", ErrExists, j.ID)
		}
		return err
	})
	if err != nil {
		return fail(ctx, err, "create schedule job %q", j.ID)
	}
	return nil
}

// GetJob returns a job; a missing one wraps ErrNotFound.
func (s *Store) GetJob(ctx context.Context, id string) (schedule.Job, error) {
	jobs, err := s.queryJobs(ctx, "get schedule job", `SELECT `+schedJobCols+` FROM schedule_jobs WHERE id = ?`, id)
	if err != nil {
		return schedule.Job{}, err
	}
	if len(jobs) == 0 {
		return schedule.Job{}, fmt.Errorf("sqlite: get schedule job %q: %w", id, ErrNotFound)
	}
	return jobs[0], nil
}

// ListJobs lists owner's jobs (all when owner is empty), by id.
func (s *Store) ListJobs(ctx context.Context, owner string) ([]schedule.Job, error) {
	if owner == "" {
		return s.queryJobs(ctx, "list schedule jobs", `SELECT `+schedJobCols+` FROM schedule_jobs ORDER BY id`)
	}
	return s.queryJobs(ctx, "list schedule jobs", `SELECT `+schedJobCols+` FROM schedule_jobs WHERE owner = ? ORDER BY id`, owner)
}

// DeleteJob removes a job and its runs; a missing one wraps ErrNotFound.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	return s.updateJob(ctx, "delete schedule job", id, `DELETE FROM schedule_jobs WHERE id = ?`, id)
}

// SetPaused pauses or resumes a job; see schedule.JobStore.
func (s *Store) SetPaused(ctx context.Context, id string, paused bool, next, at time.Time) error {
	return s.updateJob(ctx, "pause schedule job", id, `UPDATE schedule_jobs SET paused = ?1,
failures = CASE WHEN ?1 = 0 THEN 0 ELSE failures END, not_before = CASE WHEN ?1 = 0 THEN NULL ELSE not_before END,
next_at = coalesce(?2, next_at), updated_at = ?3 WHERE id = ?4`, boolInt(paused), optMicros(next), toMicros(s.stamp(at)), id)
}

func (s *Store) updateJob(ctx context.Context, op, id, q string, args ...any) error {
	if id == "" {
		return fmt.Errorf("sqlite: %s: %w: empty id", op, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: %s %q: %w", op, id, err)
	}
	var n int64
	if err := d.write(ctx, func(tx *wtx) (err error) { n, err = tx.rowsAffected(q, args...); return err }); err != nil {
		return fail(ctx, err, "%s %q", op, id)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: %s %q: %w", op, id, ErrNotFound)
	}
	return nil
}

func (s *Store) queryJobs(ctx context.Context, op, q string, args ...any) ([]schedule.Job, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return queryAll(ctx, d, op, q, args, scanSchedJob)
}

func scanSchedJob(r rowScanner) (schedule.Job, error) {
	var j schedule.Job
	var every, lateness, maxFail, paused, failures int64
	var at, next, notBefore, lastRun sql.NullInt64
	var created, updated int64
	var outcome string
	err := r.Scan(&j.ID, &j.Name, &j.Owner, &j.Deliver, &j.Agent, &j.Prompt, &j.Spec.Cron, &j.Spec.Timezone, &every, &at,
		&j.Session, &j.QuietIf, &j.BudgetUSD, &j.CatchUp.Policy, &lateness, &maxFail, &paused, &next, &notBefore,
		&failures, &outcome, &j.LastError, &lastRun, &created, &updated)
	if err != nil {
		return j, err
	}
	j.Spec.Every = time.Duration(every) * time.Second
	j.Spec.At = fromOptMicros(at)
	j.CatchUp.MaxLateness = time.Duration(lateness) * time.Second
	j.MaxFailures, j.Paused, j.Failures = int(maxFail), paused != 0, int(failures)
	j.Next, j.NotBefore, j.LastRunAt = fromOptMicros(next), fromOptMicros(notBefore), fromOptMicros(lastRun)
	j.LastOutcome = schedule.Outcome(outcome)
	j.CreatedAt, j.UpdatedAt = fromMicros(created), fromMicros(updated)
	return j, nil
}

// errSlotLost rolls back a claim whose cursor moved or whose slot was taken (schedule_runs.go).
var errSlotLost = errors.New("slot lost")
