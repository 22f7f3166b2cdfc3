// Consolidation jobs: the per-person queue that turns conversation into long-term memories,
// its leases, and the part of the transcript each job reads (MessagesBy).

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// MessagesBy returns up to limit transcript entries of the session with Seq > after that belong
// to turns of userID (the turn's qualified user: its requester), oldest first. The consolidation
// worker reads the part of one person's conversation it has not seen; other people's turns in a
// shared session are not theirs to be credited with.
func (s *Store) MessagesBy(ctx context.Context, key echogate.SessionKey, userID string, after int64, limit int) ([]echogate.StoredMessage, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: messages of %q: %w", key, err)
	}
	st, err := d.read(ctx, `SELECT m.seq, m.turn, m.body, m.at FROM messages m JOIN turns t ON t.id = m.turn
WHERE m.session = ? AND m.seq > ? AND t.user_id = ? ORDER BY m.seq LIMIT ?`)
	if err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	rows, err := st.QueryContext(ctx, string(key), after, userID, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	defer rows.Close()
	var out []echogate.StoredMessage
	for rows.Next() {
		var (
			m    = echogate.StoredMessage{Session: key}
			body []byte
			at   int64
		)
		if err := rows.Scan(&m.Seq, &m.Turn, &body, &at); err != nil {
			return nil, fail(ctx, err, "messages of %q", key)
		}
		if err := json.Unmarshal(body, &m.Message); err != nil {
			return nil, fmt.Errorf("sqlite: messages of %q: decode seq %d: %w", key, m.Seq, err)
		}
		m.At = fromMicros(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	return out, nil
}

// EnqueueConsolidation schedules the consolidation of j.UserID's part of the session at j.DueAt
// (debounced: a job already pending moves to j.DueAt, but never past the notAfter of its first
// enqueue). Each (session, user) has a job and a cursor of its own; the enqueue keeps the
// cursor and records the latest channel. A new job starts at the session's floor (see
// migration 0012).
func (s *Store) EnqueueConsolidation(ctx context.Context, j memrec.ConsolidationJob, notAfter time.Time) error {
	if j.Session == "" {
		return fmt.Errorf("sqlite: enqueue consolidation: %w: empty session", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: enqueue consolidation of %q: %w", j.Session, err)
	}
	due := s.stamp(j.DueAt)
	if notAfter.Before(due) {
		notAfter = due
	}
	err = d.write(ctx, func(tx *wtx) error {
		_, err := tx.exec(`INSERT INTO memory_jobs (session, user_id, channel, cursor, due_at, not_after, gen, updated_at)
VALUES (?, ?, ?, coalesce((SELECT cursor FROM memory_floors WHERE session = ?), 0), ?, ?, 1, ?)
ON CONFLICT (session, user_id) DO UPDATE SET channel = excluded.channel, gen = gen + 1,
 due_at = CASE WHEN due_at IS NULL THEN excluded.due_at ELSE min(excluded.due_at, coalesce(not_after, excluded.due_at)) END,
 not_after = CASE WHEN due_at IS NULL THEN excluded.not_after ELSE not_after END,
 updated_at = excluded.updated_at`,
			j.Session, j.UserID, j.Channel, j.Session, toMicros(due), toMicros(notAfter), toMicros(s.now()))
		return err
	})
	if err != nil {
		return fail(ctx, err, "enqueue consolidation of %q", j.Session)
	}
	return nil
}

// The consolidation state of a session goes with its transcript (DeleteSession, PruneSessions):
// a session started again under the same key numbers its messages from 1, below the old cursors.
const (
	qDeleteMemoryJobs  = `DELETE FROM memory_jobs WHERE session = ?`
	qDeleteMemoryFloor = `DELETE FROM memory_floors WHERE session = ?`
)

const jobCols = `session, user_id, channel, cursor, attempts, due_at, worker, gen, lease_until, last_error`

func scanJob(r rowScanner) (memrec.ConsolidationJob, error) {
	var (
		j          memrec.ConsolidationJob
		due, lease sql.NullInt64
	)
	err := r.Scan(&j.Session, &j.UserID, &j.Channel, &j.Cursor, &j.Attempts, &due, &j.Worker, &j.Gen, &lease, &j.LastError)
	j.DueAt, j.LeaseUntil = fromOptMicros(due), fromOptMicros(lease)
	return j, err
}

// ClaimConsolidation takes the oldest due job whose lease is free (or expired) for worker until
// now+lease, counting an attempt. ok is false when no job is due. Two workers never hold one
// session's job at once: the claim is one write transaction.
func (s *Store) ClaimConsolidation(ctx context.Context, worker string, now time.Time, lease time.Duration) (memrec.ConsolidationJob, bool, error) {
	if worker == "" || lease <= 0 {
		return memrec.ConsolidationJob{}, false, fmt.Errorf("sqlite: claim consolidation: %w: need a worker id and a positive lease", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return memrec.ConsolidationJob{}, false, fmt.Errorf("sqlite: claim consolidation: %w", err)
	}
	var (
		j  memrec.ConsolidationJob
		ok bool
	)
	n := toMicros(now)
	err = d.write(ctx, func(tx *wtx) error {
		st, err := tx.stmt(`UPDATE memory_jobs SET worker = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
WHERE rowid = (SELECT rowid FROM memory_jobs WHERE due_at IS NOT NULL AND due_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
 ORDER BY due_at LIMIT 1)
RETURNING ` + jobCols)
		if err != nil {
			return err
		}
		j, err = scanJob(st.QueryRowContext(tx.ctx, worker, toMicros(now.Add(lease)), n, n, n))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	if err != nil {
		return memrec.ConsolidationJob{}, false, fail(ctx, err, "claim consolidation")
	}
	return j, ok, nil
}

// holdsLease checks inside a write transaction that j's claim is still the current one.
func holdsLease(tx *wtx, j memrec.ConsolidationJob) error {
	var worker string
	var lease sql.NullInt64
	err := tx.queryRow("SELECT worker, lease_until FROM memory_jobs WHERE session = ? AND user_id = ?", []any{j.Session, j.UserID}, &worker, &lease)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (worker != j.Worker || !lease.Valid || lease.Int64 != toMicros(j.LeaseUntil))) {
		return ErrLeaseLost
	}
	return err
}

// CompleteConsolidation applies res and advances the session's cursor in one transaction, and
// frees the lease. The job stays pending when the session was enqueued again after the claim.
// It fails with ErrLeaseLost (writing nothing) when another worker has taken the job over.
func (s *Store) CompleteConsolidation(ctx context.Context, j memrec.ConsolidationJob, res memrec.ConsolidationResult) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: complete consolidation of %q: %w", j.Session, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		if err := holdsLease(tx, j); err != nil {
			return err
		}
		for _, m := range res.Insert {
			if err := s.putMemory(tx, m); err != nil {
				return err
			}
		}
		for _, m := range res.Update {
			if len(m.Embedding) > 0 {
				if err := checkDims(tx, len(m.Embedding)); err != nil {
					return err
				}
			}
			n, err := tx.rowsAffected(`UPDATE memories SET text = ?, kind = ?, importance = ?, embedding = coalesce(?, embedding),
 embed_model = CASE WHEN ? THEN ? ELSE embed_model END, updated_at = ?, expires_at = ?, source_turn = ? WHERE id = ?`,
				m.Text, m.Kind, m.Importance, vecBlob(m.Embedding), boolInt(len(m.Embedding) > 0), m.EmbedModel, toMicros(s.stamp(m.UpdatedAt)), optMicros(m.ExpiresAt), m.SourceTurn, m.ID)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("update memory %q: %w", m.ID, ErrNotFound)
			}
		}
		for _, sp := range res.Supersede {
			if _, err := tx.exec("UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ? AND superseded_by = ''",
				sp.New, toMicros(s.stamp(sp.At)), sp.Old); err != nil {
				return err
			}
		}
		if !res.ExpireBefore.IsZero() && res.ExpireOwner != "" {
			if _, err := tx.exec("DELETE FROM memories WHERE owner = ? AND expires_at IS NOT NULL AND expires_at <= ?",
				res.ExpireOwner, toMicros(res.ExpireBefore)); err != nil {
				return err
			}
		}
		_, err := tx.exec(`UPDATE memory_jobs SET cursor = max(cursor, ?), worker = '', lease_until = NULL, attempts = 0, last_error = '',
 due_at = CASE WHEN gen = ? THEN NULL ELSE due_at END, not_after = CASE WHEN gen = ? THEN NULL ELSE not_after END, updated_at = ? WHERE session = ? AND user_id = ?`,
			res.Cursor, j.Gen, j.Gen, toMicros(s.now()), j.Session, j.UserID)
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
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: release consolidation of %q: %w", j.Session, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		if err := holdsLease(tx, j); err != nil {
			return err
		}
		_, err := tx.exec(`UPDATE memory_jobs SET worker = '', lease_until = NULL, last_error = ?, updated_at = ?,
 due_at = ?, not_after = CASE WHEN ? IS NULL THEN NULL ELSE not_after END, attempts = CASE WHEN ? IS NULL THEN 0 ELSE attempts END WHERE session = ? AND user_id = ?`,
			errText, toMicros(s.now()), optMicros(retryAt), optMicros(retryAt), optMicros(retryAt), j.Session, j.UserID)
		return err
	})
	if err != nil {
		return fail(ctx, err, "release consolidation of %q", j.Session)
	}
	return nil
}

// ConsolidationState returns the consolidation row of userID in the session (cursor, pending
// job); unknown ones wrap ErrNotFound.
func (s *Store) ConsolidationState(ctx context.Context, session, userID string) (memrec.ConsolidationJob, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return memrec.ConsolidationJob{}, fmt.Errorf("sqlite: consolidation state of %q: %w", session, err)
	}
	st, err := d.read(ctx, "SELECT "+jobCols+" FROM memory_jobs WHERE session = ? AND user_id = ?")
	if err != nil {
		return memrec.ConsolidationJob{}, fail(ctx, err, "consolidation state of %q", session)
	}
	j, err := scanJob(st.QueryRowContext(ctx, session, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return memrec.ConsolidationJob{}, fmt.Errorf("sqlite: consolidation state of %q for %q: %w", session, userID, ErrNotFound)
	}
	if err != nil {
		return memrec.ConsolidationJob{}, fail(ctx, err, "consolidation state of %q", session)
	}
	return j, nil
}
