package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/jackc/pgx/v5"
)

const (
	usageCols    = `id, turn, session, user_id, channel, agent, trigger, kind, model, input_tokens, output_tokens, cached_input_tokens, cost_usd, failed, at`
	qRecordUsage = `INSERT INTO usage (turn, session, user_id, channel, agent, trigger, kind, model,
input_tokens, output_tokens, cached_input_tokens, cost_usd, failed, at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id`
)

// RecordUsage appends one entry to the ledger and returns its id (increasing, never reused).
// At zero means now.
func (s *Store) RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error) {
	p, err := s.pool(ctx, fmt.Sprintf("record usage of turn %q", r.Turn))
	if err != nil {
		return 0, err
	}
	u := r.Usage
	var id int64
	err = p.QueryRow(ctx, qRecordUsage, r.Turn, string(r.Session), r.UserID, r.Channel, r.Agent, string(r.Trigger),
		string(u.Kind), u.Model, u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CostUSD, u.Failed,
		utc(s.stamp(r.At))).Scan(&id)
	if err != nil {
		return 0, fail(ctx, err, "record usage of turn %q", r.Turn)
	}
	return id, nil
}

// usageWhere builds the WHERE clause of f with only the set fields, so PostgreSQL can use the
// matching index (user_id, at), (session, at), (turn) or (at); channel and agent are
// filters within one of those (see migration 0011). The shapes are
// few (2^6), so the statements stay cached. Placeholders start at $1.
func usageWhere(f echogate.UsageFilter) (string, []any) {
	var (
		conds []string
		args  []any
	)
	add := func(col, op string, arg any) {
		args = append(args, arg)
		conds = append(conds, col+" "+op+" $"+strconv.Itoa(len(args)))
	}
	if f.Turn != "" {
		add("turn", "=", f.Turn)
	}
	if f.Session != "" {
		add("session", "=", string(f.Session))
	}
	if f.UserID != "" {
		add("user_id", "=", f.UserID)
	}
	if f.Channel != "" {
		add("channel", "=", f.Channel)
	}
	if f.Agent != "" {
		add("agent", "=", f.Agent)
	}
	if !f.Since.IsZero() {
		add("at", ">=", utc(f.Since))
	}
	if !f.Until.IsZero() {
		add("at", "<", utc(f.Until))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// describeFilter renders a filter for error messages.
func describeFilter(f echogate.UsageFilter) string {
	return fmt.Sprintf("{turn=%q session=%q user=%q channel=%q agent=%q since=%s until=%s}",
		f.Turn, f.Session, f.UserID, f.Channel, f.Agent, f.Since.Format(time.RFC3339Nano), f.Until.Format(time.RFC3339Nano))
}

// SumUsage sums input, output and cached tokens and cost over the ledger entries matching f
// (empty fields match everything; Since inclusive, Until exclusive). Kind and Model of the
// result are empty. Nothing matching sums to zero.
func (s *Store) SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error) {
	p, err := s.pool(ctx, "sum usage "+describeFilter(f))
	if err != nil {
		return echogate.Usage{}, err
	}
	where, args := usageWhere(f)
	// sum(bigint) is numeric in PostgreSQL: cast back to bigint (a ledger overflowing int64 tokens
	// is an error, not a silent wrap).
	q := `SELECT coalesce(sum(input_tokens), 0)::bigint, coalesce(sum(output_tokens), 0)::bigint,
coalesce(sum(cached_input_tokens), 0)::bigint, coalesce(sum(cost_usd), 0)::double precision FROM usage` + where
	var u echogate.Usage
	if err := p.QueryRow(ctx, q, args...).Scan(&u.InputTokens, &u.OutputTokens, &u.CachedInputTokens, &u.CostUSD); err != nil {
		return echogate.Usage{}, fail(ctx, err, "sum usage %s", describeFilter(f))
	}
	return u, nil
}

// ListUsage lists the ledger entries matching f, newest first (by time, then id), at most
// limit (limit <= 0: all).
func (s *Store) ListUsage(ctx context.Context, f echogate.UsageFilter, limit int) ([]echogate.UsageRecord, error) {
	p, err := s.pool(ctx, "list usage "+describeFilter(f))
	if err != nil {
		return nil, err
	}
	where, args := usageWhere(f)
	args = append(args, sqlLimit(limit))
	q := `SELECT ` + usageCols + ` FROM usage` + where + ` ORDER BY at DESC, id DESC LIMIT $` + strconv.Itoa(len(args))
	rows, err := p.Query(ctx, q, args...)
	if err != nil {
		return nil, fail(ctx, err, "list usage %s", describeFilter(f))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (echogate.UsageRecord, error) {
		var (
			r                      echogate.UsageRecord
			session, trigger, kind string
		)
		err := row.Scan(&r.ID, &r.Turn, &session, &r.UserID, &r.Channel, &r.Agent, &trigger, &kind, &r.Usage.Model,
			&r.Usage.InputTokens, &r.Usage.OutputTokens, &r.Usage.CachedInputTokens, &r.Usage.CostUSD, &r.Usage.Failed, &r.At)
		r.Session = echogate.SessionKey(session)
		r.Trigger = echogate.UsageTrigger(trigger)
		r.Usage.Kind = echogate.UsageKind(kind)
		r.At = r.At.UTC()
		return r, err
	})
	if err != nil {
		return nil, fail(ctx, err, "list usage %s", describeFilter(f))
	}
	return nilIfEmpty(out), nil
}
