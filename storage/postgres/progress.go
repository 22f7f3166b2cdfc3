package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/jackc/pgx/v5"
)

// RecordProgress appends msgs to the session's transcript under turn (as AppendMessages) and
// records the ledger entries usage (as RecordUsage, setting their IDs), in one batch in one
// (implicit) transaction: both are written or neither (then every ID stays 0). It is what a turn writes
// when the model asks for a tool: the user's message and the spend so far, one round trip.
func (s *Store) RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error {
	if key == "" {
		return fmt.Errorf("postgres: record progress of turn %q: %w: empty session key", turn, ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("record progress of turn %q", turn))
	if err != nil {
		return err
	}
	roles, bodies, err := encodeRows(msgs)
	if err != nil {
		return fmt.Errorf("postgres: record progress of turn %q: %w", turn, err)
	}
	ids := make([]int64, len(usage))
	b := &pgx.Batch{}
	if len(msgs) > 0 {
		b.Queue(qAppend, string(key), int64(len(msgs)), turn, utc(s.stamp(at)), roles, bodies)
	}
	for _, r := range usage {
		u := r.Usage
		b.Queue(qRecordUsage, r.Turn, string(r.Session), r.UserID, r.Channel, r.Agent, string(r.Trigger), string(u.Kind), u.Model,
			u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CostUSD, u.Failed, utc(s.stamp(r.At)))
	}
	// One implicit transaction (sendAtomic); qAppend inserts every message or fails.
	err = sendAtomic(ctx, p, b, func(br pgx.BatchResults) error {
		if len(msgs) > 0 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("append %d messages: %w", len(msgs), err)
			}
		}
		for i := range usage {
			if err := br.QueryRow().Scan(&ids[i]); err != nil {
				return fmt.Errorf("record usage entry %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		return fail(ctx, err, "record progress of turn %q", turn)
	}
	for i := range usage {
		usage[i].ID = ids[i]
	}
	return nil
}
