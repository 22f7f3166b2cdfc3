package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/jackc/pgx/v5"
)

// BeginTurn begins a turn (pipeline.TurnLog): the record is written in the round trip that
// reads what the turn's context needs (the checkpoint, the transcript after the history cache),
// and the input waits (turnstart.DeferredBatch): in most turns it is appended with the answer
// in the end's one write, so a plain turn makes one write transaction and one transcript append
// less. It is written before a tool runs or the answer is posted, or after
// turnstart.DefaultDelay. A replica that takes the event over after this process died finds the
// running turn (its record is durable before anything is posted) and whether the question was
// saved (its messages under the turn's id), as a restarted single process does.
func (s *Store) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.DeferredBatch(ctx, b, batchBegin{Writer: turnstart.Blocking(s), s: s}, turnstart.DefaultDelay)
}

// batchBegin is the store as a turnstart.BatchWriter.
type batchBegin struct {
	turnstart.Writer
	s *Store
}

func (b batchBegin) BeginWithInput(ctx context.Context, rec echogate.TurnRecord, input []echogate.Message, at time.Time, reads turnstart.Reads) (turnstart.Read, error) {
	return b.s.BeginWithInput(ctx, rec, input, at, reads)
}

// BeginWithInput inserts the turn t and appends input (none: the record alone) to its session
// under t.ID in one batch:
// CreateTurn and AppendMessages in one round trip and one implicit transaction (both or
// neither; turnstart.BatchWriter). An id that exists already wraps ErrExists, and no input is
// appended. What reads asks for is read first in the same batch, before the writes: the
// session's newest checkpoint (as LatestCheckpoint: its Err wraps ErrNotFound when there is
// none) and the transcript entries after reads.Since (as HistorySince).
func (s *Store) BeginWithInput(ctx context.Context, t echogate.TurnRecord, input []echogate.Message, at time.Time, reads turnstart.Reads) (turnstart.Read, error) {
	var rd turnstart.Read
	err := s.beginWithInput(ctx, t, input, at, reads, &rd)
	return rd, err
}

func (s *Store) beginWithInput(ctx context.Context, t echogate.TurnRecord, input []echogate.Message, at time.Time, reads turnstart.Reads, rd *turnstart.Read) error {
	if t.ID == "" {
		return fmt.Errorf("postgres: begin turn: %w: empty id", ErrInvalid)
	}
	if t.Session == "" {
		return fmt.Errorf("postgres: begin turn %q: %w: empty session key", t.ID, ErrInvalid)
	}
	roles, bodies, err := encodeRows(input)
	if err != nil {
		return fmt.Errorf("postgres: begin turn %q: %w", t.ID, err)
	}
	p, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin turn %q: %w", t.ID, err)
	}
	op := &beginOp{s: s, ctx: ctx, t: t, n: len(input), reads: reads, rd: rd,
		append: []any{string(t.Session), int64(len(input)), t.ID, utc(s.stamp(at)), roles, bodies}}
	// When the session's lock is held here (the turn's drain took it), the begin joins its
	// lane's next group.
	var lane *lockLane
	switch {
	case p.mux != nil:
		if h := p.mux.holding(t.Session); h != nil {
			lane = h.lane
		}
	case p.leases != nil && p.leases.holds(t.Session):
		lane = p.leases.lane(t.Session)
	}
	if lane != nil {
		err = lane.do(ctx, op)
	} else {
		b := &pgx.Batch{}
		op.queue(b)
		err = sendAtomic(ctx, p.q, b, op.read)
	}
	if err != nil {
		return op.failed(err)
	}
	return nil
}

// beginOp is BeginWithInput's batch: the reads, the turn's record, the input. On a lane it
// joins a group (laneOp); on the pool it is sent alone.
type beginOp struct {
	s      *Store
	ctx    context.Context // for the errors' wording only
	t      echogate.TurnRecord
	n      int   // input messages
	append []any // qAppend's arguments
	reads  turnstart.Reads
	rd     *turnstart.Read
	err    error // read's last error, worded for the caller
}

func (o *beginOp) queue(b *pgx.Batch) {
	t := o.t
	if o.reads.Checkpoint {
		b.Queue(qLatestCheckpoint, string(t.Session))
	}
	if o.reads.Since != nil {
		b.Queue(qHistorySince, string(t.Session), o.reads.Since.Seq, historySinceLimit(o.reads.SinceLimit))
	}
	b.Queue(qCreateTurn, t.ID, string(t.Session), t.EventKey, t.UserID, t.Agent, string(t.Status), t.Model,
		t.RouteReason, t.Error, t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, utc(o.s.stamp(t.StartedAt)), optTime(t.EndedAt), echogate.JoinSkills(t.Skills))
	if o.n > 0 {
		b.Queue(qAppend, o.append...)
	}
}

// read reads queue's results into o.rd. It returns the server's errors as they are (a refused
// group is undone and run again op by op) and keeps each worded for the caller in o.err.
func (o *beginOp) read(br pgx.BatchResults) error {
	o.err = nil
	raw, worded := o.readAll(br)
	o.err = worded
	return raw
}

// readAll is read: each error both as it came and as the caller gets it.
func (o *beginOp) readAll(br pgx.BatchResults) (raw, worded error) {
	t, rd := o.t, o.rd
	*rd = turnstart.Read{}
	var err error
	if o.reads.Checkpoint {
		if rd.Checkpoint, err = o.s.scanCheckpoint(o.ctx, t.Session, br.QueryRow()); err != nil {
			return err, err
		}
	}
	if o.reads.Since != nil {
		rows, err := br.Query()
		if err != nil {
			return err, fail(o.ctx, err, "begin turn %q: history since %d", t.ID, o.reads.Since.Seq)
		}
		h := &rd.Since
		if h.Entries, h.OK, h.Err = scanHistorySince(o.ctx, t.Session, *o.reads.Since, o.reads.SinceLimit, rows); h.Err != nil {
			return h.Err, h.Err
		}
	}
	if _, err := br.Exec(); err != nil {
		if isUniqueViolation(err) {
			return err, fmt.Errorf("postgres: begin turn %q: %w (%w)", t.ID, ErrExists, err)
		}
		return err, fail(o.ctx, err, "begin turn %q", t.ID)
	}
	if o.n > 0 {
		tag, err := br.Exec()
		if err != nil {
			return err, fail(o.ctx, err, "begin turn %q: append %d messages", t.ID, o.n)
		}
		if tag.RowsAffected() != int64(o.n) {
			err := fmt.Errorf("postgres: begin turn %q: append %d messages: inserted %d rows", t.ID, o.n, tag.RowsAffected())
			return err, err
		}
	}
	return nil, nil
}

// failed is the caller's error for a begin that failed with err: read's wording of it, or err
// wrapped when it failed before read (the lane, the connection).
func (o *beginOp) failed(err error) error {
	if o.err != nil {
		return o.err
	}
	return fail(o.ctx, err, "begin turn %q", o.t.ID)
}

func (o *beginOp) start(*lockLane) bool               { return true }
func (o *beginOp) locks() echogate.SessionKey         { return "" }
func (o *beginOp) releases() echogate.SessionKey      { return "" }
func (o *beginOp) readRelease(bool)                   {}
func (o *beginOp) done(*lockLane, uint64, error) bool { return false }
