package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate"
)

const (
	qResumeDeletePending = `DELETE FROM pending WHERE session = ? AND turn = ?`
	qResumeMarkPaused    = `UPDATE turns SET status = ? WHERE id = ? AND status IN (?, ?)`
	qInsertResume        = `INSERT INTO resumes (turn, session, event_key, record, created_at) VALUES (?, ?, ?, ?, ?)`
	qGetResume           = `SELECT record, tool_started_at, tool_result FROM resumes WHERE event_key = ? ORDER BY created_at DESC LIMIT 1`
	qToolStarted         = `UPDATE resumes SET tool_started_at = ? WHERE turn = ?`
	qToolResult          = `UPDATE resumes SET tool_result = ? WHERE turn = ?`
	qDeleteResume        = `DELETE FROM resumes WHERE turn = ?`
)

// ResumeTurn replaces the session's pause of turn r.Paused.Turn by the resume record r and the
// resuming turn's record rec, in one transaction (see pipeline.TurnLog); the paused turn's
// record becomes resumed. Without that pause nothing is written and the error wraps
// ErrNotFound.
func (s *Store) ResumeTurn(ctx context.Context, r echogate.TurnResume, rec echogate.TurnRecord) error {
	switch {
	case r.Session == "" || r.Turn == "" || r.Paused.Turn == "":
		return fmt.Errorf("sqlite: resume turn %q: %w: empty session, turn or paused turn", r.Turn, ErrInvalid)
	case rec.ID != r.Turn:
		return fmt.Errorf("sqlite: resume turn %q: %w: the record is of turn %q", r.Turn, ErrInvalid, rec.ID)
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sqlite: resume turn %q: encode: %w", r.Turn, err)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: resume turn %q: %w", r.Turn, err)
	}
	at := toMicros(s.stamp(r.At))
	err = d.write(ctx, func(tx *wtx) error {
		n, err := tx.rowsAffected(qResumeDeletePending, string(r.Session), r.Paused.Turn)
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		// Running too: a crash may have come after the pause was saved, before its turn's end.
		if _, err := tx.exec(qResumeMarkPaused, string(echogate.TurnResumed), r.Paused.Turn, string(echogate.TurnPaused), string(echogate.TurnRunning)); err != nil {
			return err
		}
		if _, err := tx.exec(qInsertResume, r.Turn, string(r.Session), r.EventKey, body, at); err != nil {
			return err
		}
		_, err = tx.exec(qCreateTurn, rec.ID, string(rec.Session), rec.EventKey, rec.UserID, rec.Agent, string(rec.Status), rec.Model,
			rec.RouteReason, rec.Error, rec.InputTokens, rec.OutputTokens, rec.CachedInputTokens, rec.CostUSD, toMicros(s.stamp(rec.StartedAt)), optMicros(rec.EndedAt), echogate.JoinSkills(rec.Skills))
		return err
	})
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("sqlite: resume turn %q: no pause of turn %q in %q: %w", r.Turn, r.Paused.Turn, r.Session, ErrNotFound)
	case err != nil:
		return fail(ctx, err, "resume turn %q", r.Turn)
	}
	return nil
}

// GetResume returns the resume record the event eventKey wrote, while its turn has not ended.
func (s *Store) GetResume(ctx context.Context, eventKey string) (echogate.TurnResume, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.TurnResume{}, fmt.Errorf("sqlite: get resume of %q: %w", eventKey, err)
	}
	st, err := d.read(ctx, qGetResume)
	if err != nil {
		return echogate.TurnResume{}, fail(ctx, err, "get resume of %q", eventKey)
	}
	var (
		body    []byte
		started sql.NullInt64
		result  []byte
	)
	err = st.QueryRowContext(ctx, eventKey).Scan(&body, &started, &result)
	if errors.Is(err, sql.ErrNoRows) {
		return echogate.TurnResume{}, fmt.Errorf("sqlite: get resume of %q: %w", eventKey, ErrNotFound)
	}
	if err != nil {
		return echogate.TurnResume{}, fail(ctx, err, "get resume of %q", eventKey)
	}
	var r echogate.TurnResume
	if err := json.Unmarshal(body, &r); err != nil {
		return echogate.TurnResume{}, fmt.Errorf("sqlite: get resume of %q: decode: %w", eventKey, err)
	}
	r.ToolStartedAt, r.ToolResult = fromOptMicros(started), result
	return r, nil
}

// RecordToolRun records the approved call of the resumed turn: begun (result nil; at zero
// means now) or its result.
func (s *Store) RecordToolRun(ctx context.Context, turn, callID string, result []byte, at time.Time) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: record call %q of turn %q: %w", callID, turn, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		if result == nil {
			n, err = tx.rowsAffected(qToolStarted, toMicros(s.stamp(at)), turn)
		} else {
			n, err = tx.rowsAffected(qToolResult, result, turn)
		}
		return err
	})
	if err != nil {
		return fail(ctx, err, "record call %q of turn %q", callID, turn)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: record call %q of turn %q: no resume record: %w", callID, turn, ErrNotFound)
	}
	return nil
}
