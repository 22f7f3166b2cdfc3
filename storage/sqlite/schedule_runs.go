package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// Scheduled work's slots (schedule.SlotStore): claims, submissions and outcomes.

const schedRunCols = `job_id, slot, event_key, claimed_by, claimed_at, submitted_at, turn_id, outcome, error, finished_at`

// DueJobs lists the enabled jobs due at now; see schedule.SlotStore.
func (s *Store) DueJobs(ctx context.Context, now time.Time, limit int) ([]schedule.Job, error) {
	n := toMicros(now)
	return s.queryJobs(ctx, "due schedule jobs", `SELECT `+schedJobCols+` FROM schedule_jobs
WHERE next_at IS NOT NULL AND paused = 0 AND next_at <= ? AND (not_before IS NULL OR not_before <= ?)
ORDER BY next_at, id LIMIT ?`, n, n, sqlLimit(limit))
}

// NextDue returns the earliest instant an enabled job becomes due; see schedule.SlotStore.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: next due schedule: %w", err)
	}
	st, err := d.read(ctx, `SELECT min(max(next_at, coalesce(not_before, next_at))) FROM schedule_jobs WHERE next_at IS NOT NULL AND paused = 0`)
	if err != nil {
		return time.Time{}, false, fail(ctx, err, "next due schedule")
	}
	var v sql.NullInt64
	if err := st.QueryRowContext(ctx).Scan(&v); err != nil {
		return time.Time{}, false, fail(ctx, err, "next due schedule")
	}
	return fromOptMicros(v), v.Valid, nil
}

// ClaimSlot claims a slot and moves its job's cursor in one transaction; see schedule.SlotStore.
func (s *Store) ClaimSlot(ctx context.Context, c schedule.Claim) (bool, error) {
	if c.JobID == "" || c.By == "" || c.Cursor.IsZero() {
		return false, fmt.Errorf("sqlite: claim slot: %w: a claim needs a job id, a cursor and a claimant", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlite: claim slot of %q: %w", c.JobID, err)
	}
	at := toMicros(s.stamp(c.At))
	var won bool
	err = d.write(ctx, func(tx *wtx) error {
		won = false
		n, err := tx.rowsAffected(`UPDATE schedule_jobs SET next_at = ?, updated_at = ? WHERE id = ? AND paused = 0 AND next_at = ?`,
			optMicros(c.Next), at, c.JobID, toMicros(c.Cursor))
		if err != nil || n == 0 {
			return err
		}
		if !c.Skip {
			n, err = tx.rowsAffected(`INSERT INTO schedule_runs (job_id, slot, event_key, claimed_by, claimed_at)
VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.JobID, toMicros(c.Slot), schedule.EventKey(c.JobID, c.Slot), c.By, at)
			if err != nil {
				return err
			}
			if n == 0 {
				return errSlotLost // undo the cursor's move
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
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: mark slot submitted: %w", err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(`UPDATE schedule_runs SET submitted_at = coalesce(submitted_at, ?) WHERE job_id = ? AND slot = ?`,
			toMicros(s.stamp(at)), jobID, toMicros(slot))
		return err
	})
	if err != nil {
		return fail(ctx, err, "mark slot %s of %q submitted", slot.Format(time.RFC3339), jobID)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: mark slot %s of %q submitted: %w", slot.Format(time.RFC3339), jobID, ErrNotFound)
	}
	return nil
}

// ReclaimStale takes over claims never submitted; see schedule.SlotStore. The single writer
// runs one reclaim at a time, so two callers never take the same run.
func (s *Store) ReclaimStale(ctx context.Context, staleBefore time.Time, by string, now time.Time, limit int) ([]schedule.Run, error) {
	if by == "" {
		return nil, fmt.Errorf("sqlite: reclaim stale slots: %w: empty claimant", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: reclaim stale slots: %w", err)
	}
	var runs []schedule.Run
	err = d.write(ctx, func(tx *wtx) error {
		runs = runs[:0]
		st, err := tx.stmt(`UPDATE schedule_runs SET claimed_by = ?, claimed_at = ? WHERE rowid IN (
SELECT rowid FROM schedule_runs WHERE submitted_at IS NULL AND outcome = '' AND claimed_at < ? ORDER BY claimed_at LIMIT ?)
RETURNING ` + schedRunCols)
		if err != nil {
			return err
		}
		rows, err := st.QueryContext(tx.ctx, by, toMicros(s.stamp(now)), toMicros(staleBefore), sqlLimit(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanSchedRun(rows)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fail(ctx, err, "reclaim stale slots")
	}
	return runs, nil
}

// FinishRun records a run's outcome and updates its job; see schedule.SlotStore.
func (s *Store) FinishRun(ctx context.Context, e schedule.RunEnd) (schedule.Finished, error) {
	if e.JobID == "" || !e.Outcome.Valid() {
		return schedule.Finished{}, fmt.Errorf("sqlite: finish run: %w: job %q outcome %q (want one of skipped, delivered, quiet, failed, unconfirmed, budget, denied)", ErrInvalid, e.JobID, e.Outcome)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return schedule.Finished{}, fmt.Errorf("sqlite: finish run of %q: %w", e.JobID, err)
	}
	at := s.stamp(e.At)
	var f schedule.Finished
	err = d.write(ctx, func(tx *wtx) error {
		f = schedule.Finished{}
		var outcome string
		if err := tx.queryRow(`SELECT outcome FROM schedule_runs WHERE job_id = ? AND slot = ?`, []any{e.JobID, toMicros(e.Slot)}, &outcome); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("run %s: %w", schedule.EventKey(e.JobID, e.Slot), ErrNotFound)
			}
			return err
		}
		j, err := scanSchedJob(txRow{tx, `SELECT ` + schedJobCols + ` FROM schedule_jobs WHERE id = ?`, []any{e.JobID}})
		if err != nil {
			return err
		}
		if outcome != "" {
			f.Job, f.Repeat = j, true
			return nil
		}
		if _, err := tx.exec(`UPDATE schedule_runs SET outcome = ?, error = ?, turn_id = ?, finished_at = ?,
submitted_at = coalesce(submitted_at, ?) WHERE job_id = ? AND slot = ?`,
			string(e.Outcome), e.Error, e.TurnID, toMicros(at), toMicros(at), e.JobID, toMicros(e.Slot)); err != nil {
			return err
		}
		f.Job, f.PausedNow = schedule.ApplyOutcome(j, e, at)
		_, err = tx.exec(`UPDATE schedule_jobs SET failures = ?, not_before = ?, paused = ?, last_outcome = ?, last_error = ?,
last_run_at = ?, updated_at = ? WHERE id = ?`, int64(f.Job.Failures), optMicros(f.Job.NotBefore), boolInt(f.Job.Paused),
			string(f.Job.LastOutcome), f.Job.LastError, toMicros(at), toMicros(at), e.JobID)
		return err
	})
	if err != nil {
		return schedule.Finished{}, fail(ctx, err, "finish run %s", schedule.EventKey(e.JobID, e.Slot))
	}
	return f, nil
}

// ListRuns lists a job's runs, newest slot first.
func (s *Store) ListRuns(ctx context.Context, jobID string, limit int) ([]schedule.Run, error) {
	return s.queryRuns(ctx, "list runs of "+jobID, `SELECT `+schedRunCols+` FROM schedule_runs WHERE job_id = ? ORDER BY slot DESC LIMIT ?`, jobID, sqlLimit(limit))
}

func (s *Store) queryRuns(ctx context.Context, op, q string, args ...any) ([]schedule.Run, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return queryAll(ctx, d, op, q, args, scanSchedRun)
}

// UnfinishedRuns lists submitted runs without an outcome; see schedule.SlotStore.
func (s *Store) UnfinishedRuns(ctx context.Context, before time.Time, limit int) ([]schedule.Run, error) {
	return s.queryRuns(ctx, "unfinished runs", `SELECT `+schedRunCols+` FROM schedule_runs
WHERE submitted_at IS NOT NULL AND outcome = '' AND submitted_at < ? ORDER BY submitted_at LIMIT ?`, toMicros(before), sqlLimit(limit))
}

func scanSchedRun(r rowScanner) (schedule.Run, error) {
	var run schedule.Run
	var slot, claimed int64
	var submitted, finished sql.NullInt64
	var outcome string
	err := r.Scan(&run.JobID, &slot, &run.EventKey, &run.ClaimedBy, &claimed, &submitted, &run.TurnID, &outcome, &run.Error, &finished)
	run.Slot, run.ClaimedAt = fromMicros(slot), fromMicros(claimed)
	run.SubmittedAt, run.FinishedAt = fromOptMicros(submitted), fromOptMicros(finished)
	run.Outcome = schedule.Outcome(outcome)
	return run, err
}

// txRow scans one row of a query on the writer's transaction.
type txRow struct {
	tx   *wtx
	q    string
	args []any
}

func (r txRow) Scan(dest ...any) error { return r.tx.queryRow(r.q, r.args, dest...) }
