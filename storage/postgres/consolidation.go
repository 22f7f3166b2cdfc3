// Consolidation jobs: the per-person queue that turns conversation into long-term memories,
// its leases, and the part of the transcript each job reads (MessagesBy).

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/jackc/pgx/v5"
)

// MessagesBy returns up to limit transcript entries of the session with Seq > after that belong
// to turns of userID (the turn's qualified user: its requester), oldest first.
func (s *Store) MessagesBy(ctx context.Context, key echogate.SessionKey, userID string, after int64, limit int) ([]echogate.StoredMessage, error) {
	p, err := s.pool(ctx, fmt.Sprintf("messages of %q", key))
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, `SELECT m.seq, m.turn, m.body, m.at FROM messages m JOIN turns t ON t.id = m.turn
WHERE m.session = $1 AND m.seq > $2 AND t.user_id = $3 ORDER BY m.seq LIMIT $4`, string(key), after, userID, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	out, err := collectMessages(key, rows)
	if err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	return out, nil
}

// EnqueueConsolidation schedules the consolidation of j.UserID's part of the session at j.DueAt
// (debounced: a job already pending moves to j.DueAt, but never past the notAfter of its first
// enqueue). Each (session, user) has a job and a cursor of its own; a new job starts at the
// session's floor (see migration 0012).
func (s *Store) EnqueueConsolidation(ctx context.Context, j memrec.ConsolidationJob, notAfter time.Time) error {
	if j.Session == "" {
		return fmt.Errorf("postgres: enqueue consolidation: %w: empty session", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("enqueue consolidation of %q", j.Session))
	if err != nil {
		return err
	}
	due := utc(s.stamp(j.DueAt))
	if notAfter.Before(due) {
		notAfter = due
	}
	_, err = p.Exec(ctx, `INSERT INTO memory_jobs AS ms (session, user_id, channel, cursor, due_at, not_after, gen, updated_at)
VALUES ($1, $2, $3, coalesce((SELECT f.cursor FROM memory_floors f WHERE f.session = $1), 0), $4, $5, 1, $6)
ON CONFLICT (session, user_id) DO UPDATE SET channel = excluded.channel, gen = ms.gen + 1,
 due_at = CASE WHEN ms.due_at IS NULL THEN excluded.due_at ELSE least(excluded.due_at, coalesce(ms.not_after, excluded.due_at)) END,
 not_after = CASE WHEN ms.due_at IS NULL THEN excluded.not_after ELSE ms.not_after END,
 updated_at = excluded.updated_at`, j.Session, j.UserID, j.Channel, due, utc(notAfter), utc(s.now()))
	if err != nil {
		return fail(ctx, err, "enqueue consolidation of %q", j.Session)
	}
	return nil
}

// The consolidation state of a session goes with its transcript (DeleteSession, PruneSessions):
// a session started again under the same key numbers its messages from 1, below the old cursors.
const (
	qDeleteMemoryJobs  = `DELETE FROM memory_jobs WHERE session = $1`
	qDeleteMemoryFloor = `DELETE FROM memory_floors WHERE session = $1`
)

const jobCols = `session, user_id, channel, cursor, attempts, due_at, worker, gen, lease_until, last_error`

func scanJob(r pgx.Row) (memrec.ConsolidationJob, error) {
	var (
		j          memrec.ConsolidationJob
		due, lease *time.Time
	)
	err := r.Scan(&j.Session, &j.UserID, &j.Channel, &j.Cursor, &j.Attempts, &due, &j.Worker, &j.Gen, &lease, &j.LastError)
	j.DueAt, j.LeaseUntil = fromOpt(due), fromOpt(lease)
	return j, err
}

// ClaimConsolidation takes the oldest due job whose lease is free (or expired) for worker until
// now+lease, counting an attempt. ok is false when no job is due. Concurrent claimers skip each
// other's rows (FOR UPDATE SKIP LOCKED), so two workers never hold one session's job at once.
func (s *Store) ClaimConsolidation(ctx context.Context, worker string, now time.Time, lease time.Duration) (memrec.ConsolidationJob, bool, error) {
	if worker == "" || lease <= 0 {
		return memrec.ConsolidationJob{}, false, fmt.Errorf("postgres: claim consolidation: %w: need a worker id and a positive lease", ErrInvalid)
	}
	p, err := s.pool(ctx, "claim consolidation")
	if err != nil {
		return memrec.ConsolidationJob{}, false, err
	}
	n := utc(now)
	j, err := scanJob(p.QueryRow(ctx, `UPDATE memory_jobs SET worker = $1, lease_until = $2, attempts = attempts + 1, updated_at = $3
WHERE (session, user_id) = (SELECT session, user_id FROM memory_jobs WHERE due_at IS NOT NULL AND due_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
 ORDER BY due_at LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING `+jobCols, worker, utc(now.Add(lease)), n))
	if errors.Is(err, pgx.ErrNoRows) {
		return memrec.ConsolidationJob{}, false, nil
	}
	if err != nil {
		return memrec.ConsolidationJob{}, false, fail(ctx, err, "claim consolidation")
	}
	return j, true, nil
}

// holdsLease locks the job's row and checks that j's claim is still the current one.
func holdsLease(ctx context.Context, tx pgx.Tx, j memrec.ConsolidationJob) error {
	var (
		worker string
		lease  *time.Time
	)
	err := tx.QueryRow(ctx, "SELECT worker, lease_until FROM memory_jobs WHERE session = $1 AND user_id = $2 FOR UPDATE", j.Session, j.UserID).Scan(&worker, &lease)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (worker != j.Worker || lease == nil || !lease.Equal(j.LeaseUntil))) {
		return ErrLeaseLost
	}
	return err
}

// CompleteConsolidation applies res and advances the session's cursor in one transaction, and
// frees the lease. The job stays pending when the session was enqueued again after the claim.
// It fails with ErrLeaseLost (writing nothing) when another worker has taken the job over.
func (s *Store) CompleteConsolidation(ctx context.Context, j memrec.ConsolidationJob, res memrec.ConsolidationResult) error {
	p, err := s.pool(ctx, fmt.Sprintf("complete consolidation of %q", j.Session))
	if err != nil {
		return err
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		if err := holdsLease(ctx, tx, j); err != nil {
			return err
		}
		for _, m := range res.Insert {
			if err := s.putMemory(ctx, tx, m); err != nil {
				return err
			}
		}
		for _, m := range res.Update {
			if len(m.Embedding) > 0 {
				if err := checkDims(ctx, tx, len(m.Embedding)); err != nil {
					return err
				}
			}
			tag, err := tx.Exec(ctx, `UPDATE memories SET text = $1, kind = $2, importance = $3, embedding = coalesce($4, embedding),
 embed_model = CASE WHEN $9 THEN $10 ELSE embed_model END, updated_at = $5, expires_at = $6, source_turn = $7 WHERE id = $8`,
				m.Text, m.Kind, m.Importance, vecArg(m.Embedding), utc(s.stamp(m.UpdatedAt)), optTime(m.ExpiresAt), m.SourceTurn, m.ID, len(m.Embedding) > 0, m.EmbedModel)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("update memory %q: %w", m.ID, ErrNotFound)
			}
		}
		for _, sp := range res.Supersede {
			if _, err := tx.Exec(ctx, "UPDATE memories SET superseded_by = $1, superseded_at = $2 WHERE id = $3 AND superseded_by = ''",
				sp.New, utc(s.stamp(sp.At)), sp.Old); err != nil {
				return err
			}
		}
		if !res.ExpireBefore.IsZero() && res.ExpireOwner != "" {
			if _, err := tx.Exec(ctx, "DELETE FROM memories WHERE owner = $1 AND expires_at IS NOT NULL AND expires_at <= $2",
				res.ExpireOwner, utc(res.ExpireBefore)); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE memory_jobs SET cursor = greatest(cursor, $1), worker = '', lease_until = NULL, attempts = 0, last_error = '',
 due_at = CASE WHEN gen = $2 THEN NULL ELSE due_at END, not_after = CASE WHEN gen = $2 THEN NULL ELSE not_after END, updated_at = $3 WHERE session = $4 AND user_id = $5`,
			res.Cursor, j.Gen, utc(s.now()), j.Session, j.UserID)
		return err
	})
	if err != nil {
		return fail(ctx, err, "complete consolidation of %q", j.Session)
	}
	return nil
}

// ReleaseConsolidation gives the job back after a failure or a deferral: it runs again at
// retryAt (zero: not until the session is enqueued again), with errText recorded. It fails with
// ErrLeaseLost when another worker has taken the job over.
func (s *Store) ReleaseConsolidation(ctx context.Context, j memrec.ConsolidationJob, retryAt time.Time, errText string) error {
	p, err := s.pool(ctx, fmt.Sprintf("release consolidation of %q", j.Session))
	if err != nil {
		return err
	}
	var retry any
	if !retryAt.IsZero() {
		retry = utc(retryAt)
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		if err := holdsLease(ctx, tx, j); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE memory_jobs SET worker = '', lease_until = NULL, last_error = $1, updated_at = $2,
 due_at = $3::timestamptz, not_after = CASE WHEN $3::timestamptz IS NULL THEN NULL ELSE not_after END,
 attempts = CASE WHEN $3::timestamptz IS NULL THEN 0 ELSE attempts END WHERE session = $4 AND user_id = $5`,
			errText, utc(s.now()), retry, j.Session, j.UserID)
		return err
	})
	if err != nil {
		return fail(ctx, err, "release consolidation of %q", j.Session)
	}
	return nil
}

// ConsolidationState returns the consolidation row of userID in the session; unknown ones wrap
// ErrNotFound.
func (s *Store) ConsolidationState(ctx context.Context, session, userID string) (memrec.ConsolidationJob, error) {
	p, err := s.pool(ctx, fmt.Sprintf("consolidation state of %q", session))
	if err != nil {
		return memrec.ConsolidationJob{}, err
	}
	j, err := scanJob(p.QueryRow(ctx, "SELECT "+jobCols+" FROM memory_jobs WHERE session = $1 AND user_id = $2", session, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return memrec.ConsolidationJob{}, fmt.Errorf("postgres: consolidation state of %q: %w", session, ErrNotFound)
	}
	if err != nil {
		return memrec.ConsolidationJob{}, fail(ctx, err, "consolidation state of %q", session)
	}
	return j, nil
}
