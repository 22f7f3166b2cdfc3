package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate/internal/schedule"
	"github.com/jackc/pgx/v5"
)

// Scheduled work's jobs (schedule.JobStore); slots are in schedule_runs.go.

const schedJobCols = `id, name, owner, deliver, agent, prompt, cron, timezone, every_s, at, session, quiet_if,
budget_usd, catch_up, max_lateness_s, max_failures, paused, next_at, not_before, failures, last_outcome,
last_error, last_run_at, created_at, updated_at`

const qInsertSchedJob = `INSERT INTO schedule_jobs (id, name, owner, deliver, agent, prompt, cron, timezone, every_s, at,
session, quiet_if, budget_usd, catch_up, max_lateness_s, max_failures, paused, next_at, spec_key, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`

// qPutConfigJob keeps the cursor, failures, pause and last outcome while the spec is unchanged.
const qPutConfigJob = qInsertSchedJob + `
ON CONFLICT (id) DO UPDATE SET name = excluded.name, owner = excluded.owner, deliver = excluded.deliver,
agent = excluded.agent, prompt = excluded.prompt, cron = excluded.cron, timezone = excluded.timezone,
every_s = excluded.every_s, at = excluded.at, session = excluded.session, quiet_if = excluded.quiet_if,
budget_usd = excluded.budget_usd, catch_up = excluded.catch_up, max_lateness_s = excluded.max_lateness_s,
max_failures = excluded.max_failures,
next_at = CASE WHEN schedule_jobs.spec_key = excluded.spec_key THEN schedule_jobs.next_at ELSE excluded.next_at END,
spec_key = excluded.spec_key, updated_at = excluded.updated_at`

func schedJobArgs(j schedule.Job, at time.Time) []any {
	return []any{j.ID, j.Name, j.Owner, j.Deliver, j.Agent, j.Prompt, j.Spec.Cron, j.Spec.Timezone,
		int64(j.Spec.Every / time.Second), optTime(utc(j.Spec.At)), j.Session, j.QuietIf, j.BudgetUSD, j.CatchUp.Policy,
		int64(j.CatchUp.MaxLateness / time.Second), j.MaxFailures, j.Paused, optTime(utc(j.Next)),
		j.Spec.Key(), utc(at), utc(at)}
}

func checkSchedJob(op string, j schedule.Job) error {
	if j.ID == "" || j.Owner == "" {
		return fmt.Errorf("postgres: %s: %w: a job needs an id and an owner", op, ErrInvalid)
	}
	return nil
}

// PutConfigJob creates or updates a config job; see schedule.JobStore.
func (s *Store) PutConfigJob(ctx context.Context, j schedule.Job) error {
	if err := checkSchedJob("put schedule job", j); err != nil {
		return err
	}
	p, err := s.pool(ctx, fmt.Sprintf("put schedule job %q", j.ID))
	if err != nil {
		return err
	}
	if _, err := p.Exec(ctx, qPutConfigJob, schedJobArgs(j, s.stamp(j.UpdatedAt))...); err != nil {
		return fail(ctx, err, "put schedule job %q", j.ID)
	}
	return nil
}

// CreateJob adds a chat job within its owner's limit; see schedule.JobStore. A transaction-scoped
// advisory lock on the owner serializes the count and the insert across replicas.
func (s *Store) CreateJob(ctx context.Context, j schedule.Job, maxPerUser int) error {
	if err := checkSchedJob("create schedule job", j); err != nil {
		return err
	}
	p, err := s.pool(ctx, fmt.Sprintf("create schedule job %q", j.ID))
	if err != nil {
		return err
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		if maxPerUser > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('echogate.schedule:' || $1, 0))`, j.Owner); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM schedule_jobs WHERE owner = $1 AND next_at IS NOT NULL`, j.Owner).Scan(&n); err != nil {
				return err
			}
			if n >= maxPerUser {
				return fmt.Errorf("%w: %s has %d scheduled jobs (scheduler.max_per_user %d); cancel one first", schedule.ErrLimit, j.Owner, n, maxPerUser)
			}
		}
		_, err := tx.Exec(ctx, qInsertSchedJob, schedJobArgs(j, s.stamp(j.CreatedAt))...)
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
	jobs, err := s.queryJobs(ctx, "get schedule job", `SELECT `+schedJobCols+` FROM schedule_jobs WHERE id = $1`, id)
	if err != nil {
		return schedule.Job{}, err
	}
	if len(jobs) == 0 {
		return schedule.Job{}, fmt.Errorf("postgres: get schedule job %q: %w", id, ErrNotFound)
	}
	return jobs[0], nil
}

// ListJobs lists owner's jobs (all when owner is empty), by id.
func (s *Store) ListJobs(ctx context.Context, owner string) ([]schedule.Job, error) {
	return s.queryJobs(ctx, "list schedule jobs", `SELECT `+schedJobCols+` FROM schedule_jobs WHERE $1 = '' OR owner = $1 ORDER BY id`, owner)
}

// DeleteJob removes a job and its runs; a missing one wraps ErrNotFound.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	return s.updateJob(ctx, "delete schedule job", id, `DELETE FROM schedule_jobs WHERE id = $1`, id)
}

// SetPaused pauses or resumes a job; see schedule.JobStore.
func (s *Store) SetPaused(ctx context.Context, id string, paused bool, next, at time.Time) error {
	return s.updateJob(ctx, "pause schedule job", id, `UPDATE schedule_jobs SET paused = $1,
failures = CASE WHEN $1 THEN failures ELSE 0 END, not_before = CASE WHEN $1 THEN not_before ELSE NULL END,
next_at = coalesce($2, next_at), updated_at = $3 WHERE id = $4`, paused, optTime(utc(next)), utc(s.stamp(at)), id)
}

func (s *Store) updateJob(ctx context.Context, op, id, q string, args ...any) error {
	if id == "" {
		return fmt.Errorf("postgres: %s: %w: empty id", op, ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("%s %q", op, id))
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, q, args...)
	if err != nil {
		return fail(ctx, err, "%s %q", op, id)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s %q: %w", op, id, ErrNotFound)
	}
	return nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) queryJobs(ctx context.Context, op, q string, args ...any) ([]schedule.Job, error) {
	p, err := s.pool(ctx, op)
	if err != nil {
		return nil, err
	}
	jobs, err := queryJobsOn(ctx, p, q, args...)
	if err != nil {
		return nil, fail(ctx, err, "%s", op)
	}
	return jobs, nil
}

func queryJobsOn(ctx context.Context, db querier, q string, args ...any) ([]schedule.Job, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []schedule.Job
	for rows.Next() {
		j, err := scanSchedJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

func scanSchedJob(r pgx.Row) (schedule.Job, error) {
	var j schedule.Job
	var every, lateness int64
	var at, next, notBefore, lastRun *time.Time
	var outcome string
	err := r.Scan(&j.ID, &j.Name, &j.Owner, &j.Deliver, &j.Agent, &j.Prompt, &j.Spec.Cron, &j.Spec.Timezone, &every, &at,
		&j.Session, &j.QuietIf, &j.BudgetUSD, &j.CatchUp.Policy, &lateness, &j.MaxFailures, &j.Paused, &next, &notBefore,
		&j.Failures, &outcome, &j.LastError, &lastRun, &j.CreatedAt, &j.UpdatedAt)
	if err != nil {
		return j, err
	}
	j.Spec.Every = time.Duration(every) * time.Second
	j.Spec.At = fromOpt(at)
	j.CatchUp.MaxLateness = time.Duration(lateness) * time.Second
	j.Next, j.NotBefore, j.LastRunAt = fromOpt(next), fromOpt(notBefore), fromOpt(lastRun)
	j.LastOutcome = schedule.Outcome(outcome)
	j.CreatedAt, j.UpdatedAt = j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	return j, nil
}

// errSlotLost rolls back a claim whose slot was taken (schedule_runs.go).
var errSlotLost = errors.New("slot lost")
