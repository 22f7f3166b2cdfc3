package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/jackc/pgx/v5"
)

const (
	pendingCols  = `session, turn, kind, call_id, tool, state, prompt_platform, prompt_channel, prompt_id, requested_by, created_at, expires_at`
	qSavePending = `INSERT INTO pending (` + pendingCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (session) DO UPDATE SET
  turn = excluded.turn, kind = excluded.kind, call_id = excluded.call_id, tool = excluded.tool,
  state = excluded.state, prompt_platform = excluded.prompt_platform, prompt_channel = excluded.prompt_channel,
  prompt_id = excluded.prompt_id, requested_by = excluded.requested_by, created_at = excluded.created_at,
  expires_at = excluded.expires_at`
	qGetPending    = `SELECT ` + pendingCols + ` FROM pending WHERE session = $1`
	qListPending   = `SELECT ` + pendingCols + ` FROM pending ORDER BY created_at, session LIMIT $1`
	qDeletePending = `DELETE FROM pending WHERE session = $1`
)

// SavePending stores p as the session's paused turn, replacing any previous one. CreatedAt zero
// means now; ExpiresAt zero means it never expires.
func (s *Store) SavePending(ctx context.Context, p echogate.PendingTurn) error {
	if p.Session == "" {
		return fmt.Errorf("postgres: save pending: %w: empty session key", ErrInvalid)
	}
	pool, err := s.pool(ctx, fmt.Sprintf("save pending of %q", p.Session))
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, qSavePending, string(p.Session), p.Turn, string(p.Kind), p.CallID, p.Tool, nonNil(p.State),
		p.Prompt.Platform, p.Prompt.Channel, p.Prompt.ID, p.RequestedBy, utc(s.stamp(p.CreatedAt)), optTime(p.ExpiresAt))
	if err != nil {
		return fail(ctx, err, "save pending of %q", p.Session)
	}
	return nil
}

func scanPending(row pgx.Row) (echogate.PendingTurn, error) {
	var (
		p             echogate.PendingTurn
		session, kind string
		expires       *time.Time
	)
	err := row.Scan(&session, &p.Turn, &kind, &p.CallID, &p.Tool, &p.State, &p.Prompt.Platform, &p.Prompt.Channel,
		&p.Prompt.ID, &p.RequestedBy, &p.CreatedAt, &expires)
	if err != nil {
		return p, err
	}
	p.Session = echogate.SessionKey(session)
	p.Kind = echogate.PauseKind(kind)
	p.CreatedAt = p.CreatedAt.UTC()
	p.ExpiresAt = fromOpt(expires)
	return p, nil
}

// GetPending returns the session's paused turn, or an error wrapping ErrNotFound.
func (s *Store) GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error) {
	pool, err := s.pool(ctx, fmt.Sprintf("get pending of %q", key))
	if err != nil {
		return echogate.PendingTurn{}, err
	}
	p, err := scanPending(pool.QueryRow(ctx, qGetPending, string(key)))
	if errors.Is(err, pgx.ErrNoRows) {
		return echogate.PendingTurn{}, fmt.Errorf("postgres: get pending of %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return echogate.PendingTurn{}, fail(ctx, err, "get pending of %q", key)
	}
	return p, nil
}

// DeletePending removes the session's paused turn; when there is none it wraps ErrNotFound
// (a resume that lost a race with the expiry sweeper can tell).
func (s *Store) DeletePending(ctx context.Context, key echogate.SessionKey) error {
	pool, err := s.pool(ctx, fmt.Sprintf("delete pending of %q", key))
	if err != nil {
		return err
	}
	tag, err := pool.Exec(ctx, qDeletePending, string(key))
	if err != nil {
		return fail(ctx, err, "delete pending of %q", key)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: delete pending of %q: %w", key, ErrNotFound)
	}
	return nil
}

// ListPending lists paused turns, oldest first (by creation, then session key), at most limit
// (limit <= 0: all).
func (s *Store) ListPending(ctx context.Context, limit int) ([]echogate.PendingTurn, error) {
	pool, err := s.pool(ctx, "list pending")
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, qListPending, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "list pending")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (echogate.PendingTurn, error) { return scanPending(r) })
	if err != nil {
		return nil, fail(ctx, err, "list pending")
	}
	return nilIfEmpty(out), nil
}
