package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
)

const (
	pendingCols  = `session, turn, kind, call_id, tool, state, prompt_platform, prompt_channel, prompt_id, requested_by, created_at, expires_at`
	qSavePending = `INSERT INTO pending (` + pendingCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session) DO UPDATE SET
  turn = excluded.turn, kind = excluded.kind, call_id = excluded.call_id, tool = excluded.tool,
  state = excluded.state, prompt_platform = excluded.prompt_platform, prompt_channel = excluded.prompt_channel,
  prompt_id = excluded.prompt_id, requested_by = excluded.requested_by, created_at = excluded.created_at,
  expires_at = excluded.expires_at`
	qGetPending    = `SELECT ` + pendingCols + ` FROM pending WHERE session = ?`
	qListPending   = `SELECT ` + pendingCols + ` FROM pending ORDER BY created_at, session LIMIT ?`
	qDeletePending = `DELETE FROM pending WHERE session = ?`
)

// SavePending stores p as the session's paused turn, replacing any previous one. CreatedAt zero
// means now; ExpiresAt zero means it never expires.
func (s *Store) SavePending(ctx context.Context, p echogate.PendingTurn) error {
	if p.Session == "" {
		return fmt.Errorf("sqlite: save pending: %w: empty session key", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: save pending of %q: %w", p.Session, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		_, err := tx.exec(qSavePending, string(p.Session), p.Turn, string(p.Kind), p.CallID, p.Tool, nonNil(p.State),
			p.Prompt.Platform, p.Prompt.Channel, p.Prompt.ID, p.RequestedBy, toMicros(s.stamp(p.CreatedAt)), optMicros(p.ExpiresAt))
		return err
	})
	if err != nil {
		return fail(ctx, err, "save pending of %q", p.Session)
	}
	return nil
}

func scanPending(row interface{ Scan(...any) error }) (echogate.PendingTurn, error) {
	var (
		p             echogate.PendingTurn
		session, kind string
		created       int64
		expires       sql.NullInt64
	)
	err := row.Scan(&session, &p.Turn, &kind, &p.CallID, &p.Tool, &p.State, &p.Prompt.Platform, &p.Prompt.Channel,
		&p.Prompt.ID, &p.RequestedBy, &created, &expires)
	if err != nil {
		return p, err
	}
	p.Session = echogate.SessionKey(session)
	p.Kind = echogate.PauseKind(kind)
	p.CreatedAt = fromMicros(created)
	p.ExpiresAt = fromOptMicros(expires)
	return p, nil
}

// GetPending returns the session's paused turn, or an error wrapping ErrNotFound.
func (s *Store) GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.PendingTurn{}, fmt.Errorf("sqlite: get pending of %q: %w", key, err)
	}
	st, err := d.read(ctx, qGetPending)
	if err != nil {
		return echogate.PendingTurn{}, fail(ctx, err, "get pending of %q", key)
	}
	p, err := scanPending(st.QueryRowContext(ctx, string(key)))
	if errors.Is(err, sql.ErrNoRows) {
		return echogate.PendingTurn{}, fmt.Errorf("sqlite: get pending of %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return echogate.PendingTurn{}, fail(ctx, err, "get pending of %q", key)
	}
	return p, nil
}

// DeletePending removes the session's paused turn; when there is none it wraps ErrNotFound
// (a resume that lost a race with the expiry sweeper can tell).
func (s *Store) DeletePending(ctx context.Context, key echogate.SessionKey) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: delete pending of %q: %w", key, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(qDeletePending, string(key))
		return err
	})
	if err != nil {
		return fail(ctx, err, "delete pending of %q", key)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: delete pending of %q: %w", key, ErrNotFound)
	}
	return nil
}

// ListPending lists paused turns, oldest first (by creation, then session key), at most limit
// (limit <= 0: all).
func (s *Store) ListPending(ctx context.Context, limit int) ([]echogate.PendingTurn, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list pending: %w", err)
	}
	st, err := d.read(ctx, qListPending)
	if err != nil {
		return nil, fail(ctx, err, "list pending")
	}
	rows, err := st.QueryContext(ctx, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "list pending")
	}
	defer rows.Close()
	var out []echogate.PendingTurn
	for rows.Next() {
		p, err := scanPending(rows)
		if err != nil {
			return nil, fail(ctx, err, "list pending")
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list pending")
	}
	return out, nil
}
