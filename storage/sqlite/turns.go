package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

const (
	turnCols    = `id, session, event_key, user_id, agent, status, model, route_reason, error, input_tokens, output_tokens, cached_input_tokens, cost_usd, started_at, ended_at, skills`
	qCreateTurn = `INSERT INTO turns (` + turnCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qUpdateTurn = `UPDATE turns SET status = ?, model = ?, route_reason = ?, error = ?,
input_tokens = ?, output_tokens = ?, cached_input_tokens = ?, cost_usd = ?, ended_at = ?, skills = ? WHERE id = ?`
	qGetTurn          = `SELECT ` + turnCols + ` FROM turns WHERE id = ?`
	qListTurnsSession = `SELECT ` + turnCols + ` FROM turns WHERE session = ? ORDER BY started_at DESC, id DESC LIMIT ?`
	qListTurnsAll     = `SELECT ` + turnCols + ` FROM turns ORDER BY started_at DESC, id DESC LIMIT ?`
)

// CreateTurn inserts a new turn. StartedAt zero means now; EndedAt zero is stored as "not
// ended". An id that exists already wraps ErrExists.
func (s *Store) CreateTurn(ctx context.Context, t echogate.TurnRecord) error {
	d, fn, err := s.createTurn(ctx, t)
	if err != nil {
		return err
	}
	return s.createdTurn(ctx, t.ID, d.write(ctx, fn))
}

// StartTurn is CreateTurn without waiting for it: it queues the insert to the writer and
// returns. done is told exactly once what CreateTurn would have returned: on the writer's
// goroutine once the transaction that holds the insert ended, or on the caller's before
// StartTurn returns when the insert was not queued (invalid record, ctx ended, store
// closed). done must not block: the writer's next transaction waits for it. A turn that
// runs while its record is written saves the goroutine that would wait for CreateTurn.
func (s *Store) StartTurn(ctx context.Context, t echogate.TurnRecord, done func(error)) {
	d, fn, err := s.createTurn(ctx, t)
	if err != nil {
		done(err)
		return
	}
	d.wr.enqueueNotify(ctx, fn, func(err error) { done(s.createdTurn(ctx, t.ID, err)) })
}

// createTurn checks t and returns the write call that inserts it.
func (s *Store) createTurn(ctx context.Context, t echogate.TurnRecord) (*dbs, func(*wtx) error, error) {
	if t.ID == "" {
		return nil, nil, fmt.Errorf("sqlite: create turn: %w: empty id", ErrInvalid)
	}
	if t.Session == "" {
		return nil, nil, fmt.Errorf("sqlite: create turn %q: %w: empty session key", t.ID, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: create turn %q: %w", t.ID, err)
	}
	return d, func(tx *wtx) error {
		_, err := tx.exec(qCreateTurn, t.ID, string(t.Session), t.EventKey, t.UserID, t.Agent, string(t.Status), t.Model,
			t.RouteReason, t.Error, t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, toMicros(s.stamp(t.StartedAt)), optMicros(t.EndedAt), echogate.JoinSkills(t.Skills))
		return err
	}, nil
}

// createdTurn is CreateTurn's error for the insert's outcome err.
func (s *Store) createdTurn(ctx context.Context, id string, err error) error {
	if err == nil {
		return nil
	}
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: create turn %q: %w", id, ErrExists)
	}
	return fail(ctx, err, "create turn %q", id)
}

// UpdateTurn overwrites the mutable fields of the turn t.ID: status, model, route reason,
// error, tokens, cost and end time (zero: not ended). Session, event, user and start are kept.
// An unknown id wraps ErrNotFound.
func (s *Store) UpdateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if t.ID == "" {
		return fmt.Errorf("sqlite: update turn: %w: empty id", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: update turn %q: %w", t.ID, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(qUpdateTurn, string(t.Status), t.Model, t.RouteReason, t.Error,
			t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, optMicros(t.EndedAt), echogate.JoinSkills(t.Skills), t.ID)
		return err
	})
	if err != nil {
		return fail(ctx, err, "update turn %q", t.ID)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: update turn %q: %w", t.ID, ErrNotFound)
	}
	return nil
}

func scanTurn(row interface{ Scan(...any) error }) (echogate.TurnRecord, error) {
	var (
		t       echogate.TurnRecord
		session string
		status  string
		started int64
		ended   sql.NullInt64
		skills  string
	)
	err := row.Scan(&t.ID, &session, &t.EventKey, &t.UserID, &t.Agent, &status, &t.Model, &t.RouteReason, &t.Error,
		&t.InputTokens, &t.OutputTokens, &t.CachedInputTokens, &t.CostUSD, &started, &ended, &skills)
	if err != nil {
		return t, err
	}
	t.Skills = echogate.SplitSkills(skills)
	t.Session = echogate.SessionKey(session)
	t.Status = echogate.TurnStatus(status)
	t.StartedAt = fromMicros(started)
	t.EndedAt = fromOptMicros(ended)
	return t, nil
}

// GetTurn returns the turn, or an error wrapping ErrNotFound.
func (s *Store) GetTurn(ctx context.Context, id string) (echogate.TurnRecord, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.TurnRecord{}, fmt.Errorf("sqlite: get turn %q: %w", id, err)
	}
	st, err := d.read(ctx, qGetTurn)
	if err != nil {
		return echogate.TurnRecord{}, fail(ctx, err, "get turn %q", id)
	}
	t, err := scanTurn(st.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return echogate.TurnRecord{}, fmt.Errorf("sqlite: get turn %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return echogate.TurnRecord{}, fail(ctx, err, "get turn %q", id)
	}
	return t, nil
}

// ListTurns lists the session's turns (all sessions' when key is empty), newest first by start
// time, at most limit (limit <= 0: all).
func (s *Store) ListTurns(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.TurnRecord, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list turns of %q: %w", key, err)
	}
	var rows *sql.Rows
	if key == "" {
		st, err := d.read(ctx, qListTurnsAll)
		if err != nil {
			return nil, fail(ctx, err, "list turns")
		}
		rows, err = st.QueryContext(ctx, sqlLimit(limit))
		if err != nil {
			return nil, fail(ctx, err, "list turns")
		}
	} else {
		st, err := d.read(ctx, qListTurnsSession)
		if err != nil {
			return nil, fail(ctx, err, "list turns of %q", key)
		}
		rows, err = st.QueryContext(ctx, string(key), sqlLimit(limit))
		if err != nil {
			return nil, fail(ctx, err, "list turns of %q", key)
		}
	}
	defer rows.Close()
	var out []echogate.TurnRecord
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, fail(ctx, err, "list turns of %q", key)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list turns of %q", key)
	}
	return out, nil
}

// isUniqueViolation reports whether err is SQLite's PRIMARY KEY / UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	var e *sqlitedrv.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return true
	}
	return false
}

// FinishTurn writes the end of a turn (see pipeline.TurnLog): it appends end.Messages,
// updates end.Turn (as UpdateTurn), records end.Usage (setting their IDs) and removes the
// turn's resume record in the main database, and returns once that committed. The completion
// of end.EventKey in the event log is then written behind (writer_lazy.go): it guards no
// effect, so it commits with the event log's next write (the next claim, sharing its pages),
// within lazyDelay, or at Close. The two files do not commit atomically: a crash before the
// completion leaves the turn ended while its event is unfinished, which the replay only
// completes; since the completion is issued only after the end committed, it never lands
// without it (the pipeline still reconciles that case at start, ReopenEvent, for databases
// written by earlier versions). UnfinishedEvents commits held completions before it reads.
// The parts succeed or fail independently, like separate calls; the error joins theirs (an
// unknown turn to update wraps ErrNotFound). An event that was never claimed, or whose
// completion fails, is logged.
func (s *Store) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	t := end.Turn
	switch {
	case end.Session == "":
		return fmt.Errorf("sqlite: finish turn %q: %w: empty session key", t.ID, ErrInvalid)
	case t.ID == "":
		return fmt.Errorf("sqlite: finish turn: %w: empty turn id", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: finish turn %q: %w", t.ID, err)
	}
	bodies, err := encodeMessages(end.Messages)
	if err != nil {
		return fmt.Errorf("sqlite: finish turn %q: %w", t.ID, err)
	}
	atUS := toMicros(s.stamp(end.At))
	var msgErr, turnErr, eventErr, usageErr error
	err = d.write(ctx, func(tx *wtx) error {
		// A failing statement rolls back only itself: the other parts still commit.
		msgErr, turnErr, usageErr = nil, nil, nil
		for i, r := range end.Usage {
			id, err := s.insertUsage(tx, r)
			if err != nil {
				usageErr = errors.Join(usageErr, fmt.Errorf("entry %d: %w", i, err))
				continue
			}
			end.Usage[i].ID = id
		}
		if len(end.Messages) > 0 {
			msgErr = appendTx(tx, end.Session, t.ID, end.Messages, bodies, atUS)
		}
		n, err := tx.rowsAffected(qUpdateTurn, string(t.Status), t.Model, t.RouteReason, t.Error,
			t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, optMicros(t.EndedAt), echogate.JoinSkills(t.Skills), t.ID)
		switch {
		case err != nil:
			turnErr = err
		case n == 0:
			turnErr = ErrNotFound
		}
		if _, err := tx.exec(qDeleteResume, t.ID); err != nil {
			turnErr = errors.Join(turnErr, fmt.Errorf("remove resume record: %w", err))
		}
		return nil
	})
	if err != nil {
		err = fail(ctx, err, "finish turn %q", t.ID) // nothing of the main part was written
		msgErr, turnErr, usageErr = nil, nil, nil
		for i := range end.Usage {
			end.Usage[i].ID = 0
		}
	}
	if end.EventKey != "" {
		eventErr = s.completeBehind(d, end.EventKey, atUS)
	}
	errs := []error{err}
	if msgErr != nil {
		errs = append(errs, fmt.Errorf("sqlite: finish turn %q: append %d messages: %w", t.ID, len(end.Messages), msgErr))
	}
	if turnErr != nil {
		errs = append(errs, fmt.Errorf("sqlite: finish turn %q: record turn: %w", t.ID, turnErr))
	}
	if usageErr != nil {
		errs = append(errs, fmt.Errorf("sqlite: finish turn %q: record usage: %w", t.ID, usageErr))
	}
	if eventErr != nil {
		errs = append(errs, fmt.Errorf("sqlite: finish turn %q: complete event %q: %w", t.ID, end.EventKey, eventErr))
	}
	return errors.Join(errs...)
}

// completeBehind queues the completion of the event key at atUS on the event log's writer, to
// be written behind (see FinishTurn). It fails only when the store is closing.
func (s *Store) completeBehind(d *dbs, key string, atUS int64) error {
	return d.ev.wr.enqueueLazy(context.Background(), func(tx *wtx) error {
		n, err := tx.rowsAffected(qCompleteEvent, atUS, key)
		if err == nil && n == 0 {
			s.log.Warn("sqlite: complete event: it was never claimed", "event_id", key)
		}
		return err
	})
}
