package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

const (
	qResumeDeletePending = `DELETE FROM pending WHERE session = $1 AND turn = $2`
	qResumeMarkPaused    = `UPDATE turns SET status = $1 WHERE id = $2 AND status IN ($3, $4)`
	qInsertResume        = `INSERT INTO resumes (turn, session, event_key, record, created_at) VALUES ($1, $2, $3, $4, $5)`
	qGetResume           = `SELECT record, tool_started_at, tool_result FROM resumes WHERE event_key = $1 ORDER BY created_at DESC LIMIT 1`
	qToolStarted         = `UPDATE resumes SET tool_started_at = $1 WHERE turn = $2`
	qToolResult          = `UPDATE resumes SET tool_result = $1 WHERE turn = $2`
	qDeleteResume        = `DELETE FROM resumes WHERE turn = $1`
)

// errNoPause rolls back a ResumeTurn whose pause is gone.
var errNoPause = errors.New("no such pause")

// ResumeTurn replaces the session's pause of turn r.Paused.Turn by the resume record r and the
// resuming turn's record rec, in one transaction (see pipeline.TurnLog); the paused turn's
// record becomes resumed. Without that pause (another replica decided first) nothing is
// written and the error wraps ErrNotFound.
func (s *Store) ResumeTurn(ctx context.Context, r echogate.TurnResume, rec echogate.TurnRecord) error {
	switch {
	case r.Session == "" || r.Turn == "" || r.Paused.Turn == "":
		return fmt.Errorf("postgres: resume turn %q: %w: empty session, turn or paused turn", r.Turn, ErrInvalid)
	case rec.ID != r.Turn:
		return fmt.Errorf("postgres: resume turn %q: %w: the record is of turn %q", r.Turn, ErrInvalid, rec.ID)
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("postgres: resume turn %q: encode: %w", r.Turn, err)
	}
	p, err := s.pool(ctx, fmt.Sprintf("resume turn %q", r.Turn))
	if err != nil {
		return err
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qResumeDeletePending, string(r.Session), r.Paused.Turn)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errNoPause
		}
		// Running too: a crash may have come after the pause was saved, before its turn's end.
		if _, err := tx.Exec(ctx, qResumeMarkPaused, string(echogate.TurnResumed), r.Paused.Turn, string(echogate.TurnPaused), string(echogate.TurnRunning)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, qInsertResume, r.Turn, string(r.Session), r.EventKey, body, utc(s.stamp(r.At))); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qCreateTurn, rec.ID, string(rec.Session), rec.EventKey, rec.UserID, rec.Agent, string(rec.Status), rec.Model,
			rec.RouteReason, rec.Error, rec.InputTokens, rec.OutputTokens, rec.CachedInputTokens, rec.CostUSD, utc(s.stamp(rec.StartedAt)), optTime(rec.EndedAt), echogate.JoinSkills(rec.Skills))
		return err
	})
	switch {
	case errors.Is(err, errNoPause):
		return fmt.Errorf("postgres: resume turn %q: no pause of turn %q in %q: %w", r.Turn, r.Paused.Turn, r.Session, ErrNotFound)
	case err != nil:
		return fail(ctx, err, "resume turn %q", r.Turn)
	}
	return nil
}

// GetResume returns the resume record the event eventKey wrote, while its turn has not ended.
func (s *Store) GetResume(ctx context.Context, eventKey string) (echogate.TurnResume, error) {
	p, err := s.pool(ctx, fmt.Sprintf("get resume of %q", eventKey))
	if err != nil {
		return echogate.TurnResume{}, err
	}
	var (
		body    []byte
		started *time.Time
		result  []byte
	)
	err = p.QueryRow(ctx, qGetResume, eventKey).Scan(&body, &started, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return echogate.TurnResume{}, fmt.Errorf("postgres: get resume of %q: %w", eventKey, ErrNotFound)
	}
	if err != nil {
		return echogate.TurnResume{}, fail(ctx, err, "get resume of %q", eventKey)
	}
	var r echogate.TurnResume
	if err := json.Unmarshal(body, &r); err != nil {
		return echogate.TurnResume{}, fmt.Errorf("postgres: get resume of %q: decode: %w", eventKey, err)
	}
	r.ToolStartedAt, r.ToolResult = fromOpt(started), result
	if !r.ToolStartedAt.IsZero() {
		r.ToolStartedAt = r.ToolStartedAt.UTC()
	}
	return r, nil
}

// RecordToolRun records the approved call of the resumed turn: begun (result nil; at zero
// means now) or its result.
func (s *Store) RecordToolRun(ctx context.Context, turn, callID string, result []byte, at time.Time) error {
	p, err := s.pool(ctx, fmt.Sprintf("record call %q of turn %q", callID, turn))
	if err != nil {
		return err
	}
	var n int64
	if result == nil {
		tag, err := p.Exec(ctx, qToolStarted, utc(s.stamp(at)), turn)
		if err != nil {
			return fail(ctx, err, "record call %q of turn %q", callID, turn)
		}
		n = tag.RowsAffected()
	} else {
		tag, err := p.Exec(ctx, qToolResult, result, turn)
		if err != nil {
			return fail(ctx, err, "record call %q of turn %q", callID, turn)
		}
		n = tag.RowsAffected()
	}
	if n == 0 {
		return fmt.Errorf("postgres: record call %q of turn %q: no resume record: %w", callID, turn, ErrNotFound)
	}
	return nil
}
