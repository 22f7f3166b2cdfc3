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
	turnCols    = `id, session, event_key, user_id, agent, status, model, route_reason, error, input_tokens, output_tokens, cached_input_tokens, cost_usd, started_at, ended_at, skills`
	qCreateTurn = `INSERT INTO turns (` + turnCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`
	qUpdateTurn = `UPDATE turns SET status = $1, model = $2, route_reason = $3, error = $4,
input_tokens = $5, output_tokens = $6, cached_input_tokens = $7, cost_usd = $8, ended_at = $9, skills = $10 WHERE id = $11`
	qGetTurn          = `SELECT ` + turnCols + ` FROM turns WHERE id = $1`
	qListTurnsSession = `SELECT ` + turnCols + ` FROM turns WHERE session = $1 ORDER BY started_at DESC, id DESC LIMIT $2`
	qListTurnsAll     = `SELECT ` + turnCols + ` FROM turns ORDER BY started_at DESC, id DESC LIMIT $1`
)

// CreateTurn inserts a new turn. StartedAt zero means now; EndedAt zero is stored as "not
// ended". An id that exists already wraps ErrExists.
func (s *Store) CreateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if t.ID == "" {
		return fmt.Errorf("postgres: create turn: %w: empty id", ErrInvalid)
	}
	if t.Session == "" {
		return fmt.Errorf("postgres: create turn %q: %w: empty session key", t.ID, ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("create turn %q", t.ID))
	if err != nil {
		return err
	}
	_, err = p.Exec(ctx, qCreateTurn, t.ID, string(t.Session), t.EventKey, t.UserID, t.Agent, string(t.Status), t.Model,
		t.RouteReason, t.Error, t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, utc(s.stamp(t.StartedAt)), optTime(t.EndedAt), echogate.JoinSkills(t.Skills))
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("postgres: create turn %q: %w", t.ID, ErrExists)
		}
		return fail(ctx, err, "create turn %q", t.ID)
	}
	return nil
}

// UpdateTurn overwrites the mutable fields of the turn t.ID: status, model, route reason,
// error, tokens, cost and end time (zero: not ended). Session, event, user and start are kept.
// An unknown id wraps ErrNotFound.
func (s *Store) UpdateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if t.ID == "" {
		return fmt.Errorf("postgres: update turn: %w: empty id", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("update turn %q", t.ID))
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, qUpdateTurn, string(t.Status), t.Model, t.RouteReason, t.Error,
		t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, optTime(t.EndedAt), echogate.JoinSkills(t.Skills), t.ID)
	if err != nil {
		return fail(ctx, err, "update turn %q", t.ID)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: update turn %q: %w", t.ID, ErrNotFound)
	}
	return nil
}

func scanTurn(row pgx.Row) (echogate.TurnRecord, error) {
	var (
		t       echogate.TurnRecord
		session string
		status  string
		ended   *time.Time
		skills  string
	)
	err := row.Scan(&t.ID, &session, &t.EventKey, &t.UserID, &t.Agent, &status, &t.Model, &t.RouteReason, &t.Error,
		&t.InputTokens, &t.OutputTokens, &t.CachedInputTokens, &t.CostUSD, &t.StartedAt, &ended, &skills)
	if err != nil {
		return t, err
	}
	t.Skills = echogate.SplitSkills(skills)
	t.Session = echogate.SessionKey(session)
	t.Status = echogate.TurnStatus(status)
	t.StartedAt = t.StartedAt.UTC()
	t.EndedAt = fromOpt(ended)
	return t, nil
}

// GetTurn returns the turn, or an error wrapping ErrNotFound.
func (s *Store) GetTurn(ctx context.Context, id string) (echogate.TurnRecord, error) {
	p, err := s.pool(ctx, fmt.Sprintf("get turn %q", id))
	if err != nil {
		return echogate.TurnRecord{}, err
	}
	t, err := scanTurn(p.QueryRow(ctx, qGetTurn, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return echogate.TurnRecord{}, fmt.Errorf("postgres: get turn %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return echogate.TurnRecord{}, fail(ctx, err, "get turn %q", id)
	}
	return t, nil
}

// ListTurns lists the session's turns (all sessions' when key is empty), newest first by start
// time, at most limit (limit <= 0: all).
func (s *Store) ListTurns(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.TurnRecord, error) {
	p, err := s.pool(ctx, fmt.Sprintf("list turns of %q", key))
	if err != nil {
		return nil, err
	}
	var rows pgx.Rows
	if key == "" {
		rows, err = p.Query(ctx, qListTurnsAll, sqlLimit(limit))
	} else {
		rows, err = p.Query(ctx, qListTurnsSession, string(key), sqlLimit(limit))
	}
	if err != nil {
		return nil, fail(ctx, err, "list turns of %q", key)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (echogate.TurnRecord, error) { return scanTurn(r) })
	if err != nil {
		return nil, fail(ctx, err, "list turns of %q", key)
	}
	return nilIfEmpty(out), nil
}
