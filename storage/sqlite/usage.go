package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/echogate/echogate"
)

const (
	usageCols    = `id, turn, session, user_id, channel, agent, trigger, kind, model, input_tokens, output_tokens, cached_input_tokens, cost_usd, failed, at`
	qRecordUsage = `INSERT INTO usage (turn, session, user_id, channel, agent, trigger, kind, model,
input_tokens, output_tokens, cached_input_tokens, cost_usd, failed, at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// RecordUsage appends one entry to the ledger and returns its id (increasing, never reused).
// At zero means now.
func (s *Store) RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: record usage of turn %q: %w", r.Turn, err)
	}
	var id int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		id, err = s.insertUsage(tx, r)
		return err
	})
	if err != nil {
		return 0, fail(ctx, err, "record usage of turn %q", r.Turn)
	}
	return id, nil
}

// insertUsage appends r to the ledger in tx and returns its id.
func (s *Store) insertUsage(tx *wtx, r echogate.UsageRecord) (int64, error) {
	u := r.Usage
	res, err := tx.exec(qRecordUsage, r.Turn, string(r.Session), r.UserID, r.Channel, r.Agent, string(r.Trigger),
		string(u.Kind), u.Model, u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CostUSD, boolInt(u.Failed),
		toMicros(s.stamp(r.At)))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// usageWhere builds the WHERE clause of f with only the set fields, so SQLite can use the
// matching index (user_id, at), (session, at), (turn) or (at); channel and agent are
// filters within one of those (see migration 0011). The shapes are
// few (2^6), so the statements stay cached.
func usageWhere(f echogate.UsageFilter) (string, []any) {
	var (
		conds []string
		args  []any
	)
	add := func(cond string, arg any) {
		conds = append(conds, cond)
		args = append(args, arg)
	}
	if f.Turn != "" {
		add("turn = ?", f.Turn)
	}
	if f.Session != "" {
		add("session = ?", string(f.Session))
	}
	if f.UserID != "" {
		add("user_id = ?", f.UserID)
	}
	if f.Channel != "" {
		add("channel = ?", f.Channel)
	}
	if f.Agent != "" {
		add("agent = ?", f.Agent)
	}
	if !f.Since.IsZero() {
		add("at >= ?", toMicros(f.Since))
	}
	if !f.Until.IsZero() {
		add("at < ?", toMicros(f.Until))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// describe renders a filter for error messages.
func describeFilter(f echogate.UsageFilter) string {
	return fmt.Sprintf("{turn=%q session=%q user=%q channel=%q agent=%q since=%s until=%s}",
		f.Turn, f.Session, f.UserID, f.Channel, f.Agent, f.Since.Format("2006-01-02T15:04:05.000Z07:00"), f.Until.Format("2006-01-02T15:04:05.000Z07:00"))
}

// SumUsage sums input, output and cached tokens and cost over the ledger entries matching f
// (empty fields match everything; Since inclusive, Until exclusive). Kind and Model of the
// result are empty. Nothing matching sums to zero.
func (s *Store) SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.Usage{}, fmt.Errorf("sqlite: sum usage %s: %w", describeFilter(f), err)
	}
	where, args := usageWhere(f)
	st, err := d.read(ctx, `SELECT coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
coalesce(sum(cached_input_tokens), 0), coalesce(sum(cost_usd), 0.0) FROM usage`+where)
	if err != nil {
		return echogate.Usage{}, fail(ctx, err, "sum usage %s", describeFilter(f))
	}
	var u echogate.Usage
	if err := st.QueryRowContext(ctx, args...).Scan(&u.InputTokens, &u.OutputTokens, &u.CachedInputTokens, &u.CostUSD); err != nil {
		return echogate.Usage{}, fail(ctx, err, "sum usage %s", describeFilter(f))
	}
	return u, nil
}

// ListUsage lists the ledger entries matching f, newest first (by time, then id), at most
// limit (limit <= 0: all).
func (s *Store) ListUsage(ctx context.Context, f echogate.UsageFilter, limit int) ([]echogate.UsageRecord, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list usage %s: %w", describeFilter(f), err)
	}
	where, args := usageWhere(f)
	st, err := d.read(ctx, `SELECT `+usageCols+` FROM usage`+where+` ORDER BY at DESC, id DESC LIMIT ?`)
	if err != nil {
		return nil, fail(ctx, err, "list usage %s", describeFilter(f))
	}
	rows, err := st.QueryContext(ctx, append(args, sqlLimit(limit))...)
	if err != nil {
		return nil, fail(ctx, err, "list usage %s", describeFilter(f))
	}
	defer rows.Close()
	var out []echogate.UsageRecord
	for rows.Next() {
		var (
			r                      echogate.UsageRecord
			session, trigger, kind string
			failed, at             int64
		)
		err := rows.Scan(&r.ID, &r.Turn, &session, &r.UserID, &r.Channel, &r.Agent, &trigger, &kind, &r.Usage.Model,
			&r.Usage.InputTokens, &r.Usage.OutputTokens, &r.Usage.CachedInputTokens, &r.Usage.CostUSD, &failed, &at)
		if err != nil {
			return nil, fail(ctx, err, "list usage %s", describeFilter(f))
		}
		r.Session = echogate.SessionKey(session)
		r.Trigger = echogate.UsageTrigger(trigger)
		r.Usage.Kind = echogate.UsageKind(kind)
		r.Usage.Failed = failed != 0
		r.At = fromMicros(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list usage %s", describeFilter(f))
	}
	return out, nil
}
