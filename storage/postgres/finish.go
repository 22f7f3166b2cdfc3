package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echogate/echogate"
)

// FinishTurn writes the end of a turn (see pipeline.TurnLog) in one transaction and one
// round trip (an implicit transaction: sendAtomic): the transcript append, the turn record's
// update, the ledger entries (their IDs set), the removal of the turn's resume record and the
// event's completion. With end.ReleaseSession, when this store holds the session's lock, the
// lock goes with the end: on a direct connection the write goes on the lock's connection and
// gives the advisory lock back after it committed, in the same round trip (finishReleasing);
// through a pooler the lease row is deleted in the end's transaction. When that
// transaction fails, the parts are written one by one, the event's completion last, so each
// succeeds or fails on its own; the error joins the parts' errors (an unknown turn to update
// or event to complete wraps ErrNotFound).
func (s *Store) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	t := end.Turn
	switch {
	case end.Session == "":
		return fmt.Errorf("postgres: finish turn %q: %w: empty session key", t.ID, ErrInvalid)
	case t.ID == "":
		return fmt.Errorf("postgres: finish turn: %w: empty turn id", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("finish turn %q", t.ID))
	if err != nil {
		return err
	}
	if end.ReleaseSession {
		if turnErr, eventErr, ok := s.finishReleasing(ctx, end); ok {
			return errors.Join(turnErr, eventErr)
		}
	}
	var lease *leaser // through a pooler: the session's lease, released with the end
	if ps := s.pools.Load(); end.ReleaseSession && ps != nil && ps.leases != nil && ps.leases.holds(end.Session) {
		lease = ps.leases
	}
	if lease != nil {
		lease.setReleased(end.Session, true) // renewals skip it from now on
	}
	turnErr, eventErr, err := s.finishBatch(ctx, p, end, lease)
	if err == nil {
		return errors.Join(turnErr, eventErr)
	}
	if lease != nil {
		lease.setReleased(end.Session, false) // nothing was written: the unlock deletes the row
	}
	if ctx.Err() != nil {
		return fail(ctx, err, "finish turn %q", t.ID)
	}
	return s.finishApart(ctx, end)
}

// finishBatch sends the parts of end in one batch, one implicit transaction; with lease (through
// a pooler, the session's lease of this store) the lease row goes in the same transaction (the
// lock is released with the end it guarded), and the batch joins the session's lane's next
// group. err means nothing was written; turnErr and eventErr report a turn or event that does
// not exist (the rest still commits).
func (s *Store) finishBatch(ctx context.Context, p *pgxpool.Pool, end echogate.TurnEnd, lease *leaser) (turnErr, eventErr, err error) {
	b := &pgx.Batch{}
	if err := s.queueFinish(b, end); err != nil {
		return nil, nil, err
	}
	if lease != nil {
		b.Queue(qDropLease, string(end.Session), s.owner)
	}
	ids := make([]int64, len(end.Usage))
	read := func(br pgx.BatchResults) error {
		var err error
		if turnErr, eventErr, err = readFinish(br, end, ids); err != nil || lease == nil {
			return err
		}
		_, err = br.Exec()
		return err
	}
	if lease != nil {
		op := &batchOp{q: func(g *pgx.Batch) { requeue(g, b) }, r: read}
		err = lease.lane(end.Session).do(ctx, op)
	} else {
		err = sendAtomic(ctx, p, b, read)
	}
	if err != nil {
		return nil, nil, err
	}
	setUsageIDs(end, ids)
	return turnErr, eventErr, nil
}

// requeue queues b's statements on g afresh: a statement queued once keeps the description pgx
// gave it, which a rerun after a refused group must not reuse.
func requeue(g, b *pgx.Batch) {
	for _, q := range b.QueuedQueries {
		g.Queue(q.SQL, q.Arguments...)
	}
}

// qFinishRecord is the turn record's final state, the removal of its resume record and the
// event's completion (the first completion wins) in one statement: whether the turn and the
// event were found. An empty event key matches no event.
const qFinishRecord = `WITH u AS (
  UPDATE turns SET status = $1, model = $2, route_reason = $3, error = $4, input_tokens = $5, output_tokens = $6,
    cached_input_tokens = $7, cost_usd = $8, ended_at = $9, skills = $10 WHERE id = $11 RETURNING 1
), r AS (
  DELETE FROM resumes WHERE turn = $11
), e AS (
  UPDATE events SET completed_at = coalesce(completed_at, $12) WHERE key = $13 RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM e)`

// queueFinish queues the statements of end's write on b, in the order readFinish reads them.
func (s *Store) queueFinish(b *pgx.Batch, end echogate.TurnEnd) error {
	t := end.Turn
	if len(end.Messages) > 0 {
		roles, bodies, err := encodeRows(end.Messages)
		if err != nil {
			return err
		}
		b.Queue(qAppend, string(end.Session), int64(len(end.Messages)), t.ID, utc(s.stamp(end.At)), roles, bodies)
	}
	b.Queue(qFinishRecord, string(t.Status), t.Model, t.RouteReason, t.Error, t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD,
		optTime(t.EndedAt), echogate.JoinSkills(t.Skills), t.ID, utc(s.stamp(end.At)), end.EventKey)
	for _, r := range end.Usage {
		u := r.Usage
		b.Queue(qRecordUsage, r.Turn, string(r.Session), r.UserID, r.Channel, r.Agent, string(r.Trigger), string(u.Kind), u.Model,
			u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CostUSD, u.Failed, utc(s.stamp(r.At)))
	}
	return nil
}

// readFinish reads the results of queueFinish's statements, the usage entries' IDs into ids.
func readFinish(br pgx.BatchResults, end echogate.TurnEnd, ids []int64) (turnErr, eventErr, err error) {
	t := end.Turn
	if len(end.Messages) > 0 {
		if _, err := br.Exec(); err != nil {
			return nil, nil, err
		}
	}
	var turnFound, eventFound bool
	if err := br.QueryRow().Scan(&turnFound, &eventFound); err != nil {
		return nil, nil, err
	}
	if !turnFound {
		turnErr = fmt.Errorf("postgres: finish turn %q: record turn: %w", t.ID, ErrNotFound)
	}
	if end.EventKey != "" && !eventFound {
		eventErr = fmt.Errorf("postgres: finish turn %q: complete event %q: %w", t.ID, end.EventKey, ErrNotFound)
	}
	for i := range end.Usage {
		if err := br.QueryRow().Scan(&ids[i]); err != nil {
			return nil, nil, err
		}
	}
	return turnErr, eventErr, nil
}

// setUsageIDs gives end's usage entries the IDs their inserts returned.
func setUsageIDs(end echogate.TurnEnd, ids []int64) {
	for i := range end.Usage {
		end.Usage[i].ID = ids[i]
	}
}

// finishApart writes the parts of end one by one, the event's completion last.
func (s *Store) finishApart(ctx context.Context, end echogate.TurnEnd) error {
	t := end.Turn
	var errs []error
	if len(end.Messages) > 0 {
		if err := s.AppendMessages(ctx, end.Session, t.ID, end.Messages, end.At); err != nil {
			errs = append(errs, fmt.Errorf("postgres: finish turn %q: append %d messages: %w", t.ID, len(end.Messages), err))
		}
	}
	if err := s.UpdateTurn(ctx, t); err != nil {
		errs = append(errs, fmt.Errorf("postgres: finish turn %q: record turn: %w", t.ID, err))
	}
	if p, err := s.pool(ctx, "remove resume record"); err == nil {
		if _, err := p.Exec(ctx, qDeleteResume, t.ID); err != nil {
			errs = append(errs, fail(ctx, err, "finish turn %q: remove resume record", t.ID))
		}
	}
	for i, r := range end.Usage {
		id, err := s.RecordUsage(ctx, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("postgres: finish turn %q: record usage entry %d: %w", t.ID, i, err))
			continue
		}
		end.Usage[i].ID = id
	}
	if end.EventKey != "" {
		if err := s.CompleteEvent(ctx, end.EventKey, end.At); err != nil {
			errs = append(errs, fmt.Errorf("postgres: finish turn %q: %w", t.ID, err))
		}
	}
	return errors.Join(errs...)
}

// encodeRows is the roles and JSON bodies of msgs, as qAppend takes them.
func encodeRows(msgs []echogate.Message) ([]string, []string, error) {
	roles := make([]string, len(msgs))
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, nil, fmt.Errorf("encode message %d: %w", i, err)
		}
		roles[i], bodies[i] = string(m.Role), string(b)
	}
	return roles, bodies, nil
}
