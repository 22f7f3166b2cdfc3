package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate/internal/schedule"
	"github.com/jackc/pgx/v5"
)

// Scheduled work's slots (schedule.SlotStore): claims, submissions and outcomes.

const schedRunCols = `job_id, slot, event_key, claimed_by, claimed_at, submitted_at, turn_id, outcome, error, finished_at`

// DueJobs lists the enabled jobs due at now; see schedule.SlotStore.
func (s *Store) DueJobs(ctx context.Context, now time.Time, limit int) ([]schedule.Job, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	return s.queryJobs(ctx, "due schedule jobs", `SELECT `+schedJobCols+` FROM schedule_jobs
WHERE next_at IS NOT NULL AND NOT paused AND next_at <= $1 AND (not_before IS NULL OR not_before <= $1)
ORDER BY next_at, id LIMIT $2`, utc(now), limit)
}

// NextDue returns the earliest instant an enabled job becomes due; see schedule.SlotStore.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	p, err := s.pool(ctx, "next due schedule")
	if err != nil {
		return time.Time{}, false, err
	}
	var v *time.Time
	if err := p.QueryRow(ctx, `SELECT min(greatest(next_at, not_before)) FROM schedule_jobs WHERE next_at IS NOT NULL AND NOT paused`).Scan(&v); err != nil {
		return time.Time{}, false, fail(ctx, err, "next due schedule")
	}
	return fromOpt(v), v != nil, nil
}

// ClaimSlot claims a slot and moves its job's cursor in one transaction; see
// schedule.SlotStore. The cursor's compare-and-set takes the job's row lock: a concurrent
// claimant (another replica) waits for it, then finds the cursor moved and writes nothing.
func (s *Store) ClaimSlot(ctx context.Context, c schedule.Claim) (bool, error) {
	if c.JobID == "" || c.By == "" || c.Cursor.IsZero() {
		return false, fmt.Errorf("postgres: claim slot: %w: a claim needs a job id, a cursor and a claimant", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("claim slot of %q", c.JobID))
	if err != nil {
		return false, err
	}
	at := utc(s.stamp(c.At))
	won := false
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE schedule_jobs SET next_at = $1, updated_at = $2 WHERE id = $3 AND NOT paused AND next_at = $4`,
			optTime(utc(c.Next)), at, c.JobID, utc(c.Cursor))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if !c.Skip {
			tag, err = tx.Exec(ctx, `INSERT INTO schedule_runs (job_id, slot, event_key, claimed_by, claimed_at)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, c.JobID, utc(c.Slot), schedule.EventKey(c.JobID, c.Slot), c.By, at)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errSlotLost // roll back the cursor's move
			}
		}
		won = true
		return nil
	})
	if errors.Is(err, errSlotLost) {
		return false, nil
	}
	if err != nil {
		return false, fail(ctx, err, "claim slot %s of %q", c.Slot.Format(time.RFC3339), c.JobID)
	}
	return won, nil
}

// MarkSubmitted records that a slot's trigger was handed over; see schedule.SlotStore.
func (s *Store) MarkSubmitted(ctx context.Context, jobID string, slot, at time.Time) error {
	op := fmt.Sprintf("mark slot %s of %q submitted", slot.Format(time.RFC3339), jobID)
	p, err := s.pool(ctx, op)
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, `UPDATE schedule_runs SET submitted_at = coalesce(submitted_at, $1) WHERE job_id = $2 AND slot = $3`,
		utc(s.stamp(at)), jobID, utc(slot))
	if err != nil {
		return fail(ctx, err, "%s", op)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s: %w", op, ErrNotFound)
	}
	return nil
}

// ReclaimStale takes over claims never submitted; see schedule.SlotStore. SKIP LOCKED and the
// repeated staleness test make concurrent replicas take disjoint runs.
func (s *Store) ReclaimStale(ctx context.Context, staleBefore time.Time, by string, now time.Time, limit int) ([]schedule.Run, error) {
	if by == "" {
		return nil, fmt.Errorf("postgres: reclaim stale slots: %w: empty claimant", ErrInvalid)
	}
	if limit <= 0 {
		limit = 1 << 30
	}
	p, err := s.pool(ctx, "reclaim stale slots")
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, `UPDATE schedule_runs r SET claimed_by = $1, claimed_at = $2 FROM (
SELECT job_id, slot FROM schedule_runs WHERE submitted_at IS NULL AND outcome = '' AND claimed_at < $3
ORDER BY claimed_at LIMIT $4 FOR UPDATE SKIP LOCKED) s
WHERE r.job_id = s.job_id AND r.slot = s.slot AND r.submitted_at IS NULL AND r.claimed_at < $3
RETURNING r.job_id, r.slot, r.event_key, r.claimed_by, r.claimed_at, r.submitted_at, r.turn_id, r.outcome, r.error, r.finished_at`,
		by, utc(s.stamp(now)), utc(staleBefore), limit)
	if err != nil {
		return nil, fail(ctx, err, "reclaim stale slots")
	}
	runs, err := scanSchedRuns(rows)
	if err != nil {
		return nil, fail(ctx, err, "reclaim stale slots")
	}
	return runs, nil
}

// FinishRun records a run's outcome and updates its job; see schedule.SlotStore. The job's row
// is locked first, so two finishes of one job's runs apply their counts in turn.
func (s *Store) FinishRun(ctx context.Context, e schedule.RunEnd) (schedule.Finished, error) {
	if e.JobID == "" || !e.Outcome.Valid() {
		return schedule.Finished{}, fmt.Errorf("postgres: finish run: %w: job %q outcome %q (want one of skipped, delivered, quiet, failed, unconfirmed, budget, denied)", ErrInvalid, e.JobID, e.Outcome)
	}
	op := "finish run " + schedule.EventKey(e.JobID, e.Slot)
	p, err := s.pool(ctx, op)
	if err != nil {
		return schedule.Finished{}, err
	}
	at := utc(s.stamp(e.At))
	var f schedule.Finished
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		f = schedule.Finished{}
		jobs, err := queryJobsOn(ctx, tx, `SELECT `+schedJobCols+` FROM schedule_jobs WHERE id = $1 FOR UPDATE`, e.JobID)
		if err != nil {
			return err
		}
		var outcome string
		err = tx.QueryRow(ctx, `SELECT outcome FROM schedule_runs WHERE job_id = $1 AND slot = $2 FOR UPDATE`, e.JobID, utc(e.Slot)).Scan(&outcome)
		if errors.Is(err, pgx.ErrNoRows) || len(jobs) == 0 {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if outcome != "" {
			f.Job, f.Repeat = jobs[0], true
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE schedule_runs SET outcome = $1, error = $2, turn_id = $3, finished_at = $4,
submitted_at = coalesce(submitted_at, $4) WHERE job_id = $5 AND slot = $6`,
			string(e.Outcome), e.Error, e.TurnID, at, e.JobID, utc(e.Slot)); err != nil {
			return err
		}
		f.Job, f.PausedNow = schedule.ApplyOutcome(jobs[0], e, at)
		_, err = tx.Exec(ctx, `UPDATE schedule_jobs SET failures = $1, not_before = $2, paused = $3, last_outcome = $4,
last_error = $5, last_run_at = $6, updated_at = $6 WHERE id = $7`, f.Job.Failures, optTime(utc(f.Job.NotBefore)), f.Job.Paused,
			string(f.Job.LastOutcome), f.Job.LastError, at, e.JobID)
		return err
	})
	if err != nil {
		return schedule.Finished{}, fail(ctx, err, "%s", op)
	}
	return f, nil
}

// ListRuns lists a job's runs, newest slot first.
func (s *Store) ListRuns(ctx context.Context, jobID string, limit int) ([]schedule.Run, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	p, err := s.pool(ctx, fmt.Sprintf("list runs of %q", jobID))
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, `SELECT `+schedRunCols+` FROM schedule_runs WHERE job_id = $1 ORDER BY slot DESC LIMIT $2`, jobID, limit)
	if err != nil {
		return nil, fail(ctx, err, "list runs of %q", jobID)
	}
	runs, err := scanSchedRuns(rows)
	if err != nil {
		return nil, fail(ctx, err, "list runs of %q", jobID)
	}
	return runs, nil
}

// UnfinishedRuns lists submitted runs without an outcome; see schedule.SlotStore.
func (s *Store) UnfinishedRuns(ctx context.Context, before time.Time, limit int) ([]schedule.Run, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	p, err := s.pool(ctx, "unfinished runs")
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, `SELECT `+schedRunCols+` FROM schedule_runs
WHERE submitted_at IS NOT NULL AND outcome = '' AND submitted_at < $1 ORDER BY submitted_at LIMIT $2`, utc(before), limit)
	if err != nil {
		return nil, fail(ctx, err, "unfinished runs")
	}
	runs, err := scanSchedRuns(rows)
	if err != nil {
		return nil, fail(ctx, err, "unfinished runs")
	}
	return runs, nil
}

func scanSchedRuns(rows pgx.Rows) ([]schedule.Run, error) {
	defer rows.Close()
	var out []schedule.Run
	for rows.Next() {
		var r schedule.Run
		var submitted, finished *time.Time
		var outcome string
		if err := rows.Scan(&r.JobID, &r.Slot, &r.EventKey, &r.ClaimedBy, &r.ClaimedAt, &submitted, &r.TurnID, &outcome, &r.Error, &finished); err != nil {
			return nil, err
		}
		r.Slot, r.ClaimedAt = r.Slot.UTC(), r.ClaimedAt.UTC()
		r.SubmittedAt, r.FinishedAt = fromOpt(submitted), fromOpt(finished)
		r.Outcome = schedule.Outcome(outcome)
		out = append(out, r)
	}
	return out, rows.Err()
}
