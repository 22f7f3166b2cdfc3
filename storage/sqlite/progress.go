package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate"
)

// RecordProgress appends msgs to the session's transcript under turn (as AppendMessages) and
// records the ledger entries usage (as RecordUsage, setting their IDs), in one write call of
// the writer: one transaction, so both are written or neither (then every ID stays 0). It is
// what a turn writes when the model asks for a tool: the user's message (a tool may read the
// transcript) and the spend so far, in one commit instead of two.
func (s *Store) RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error {
	if key == "" {
		return fmt.Errorf("sqlite: record progress of turn %q: %w: empty session key", turn, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: record progress of turn %q: %w", turn, err)
	}
	bodies, err := encodeMessages(msgs)
	if err != nil {
		return fmt.Errorf("sqlite: record progress of turn %q: %w", turn, err)
	}
	atUS := toMicros(s.stamp(at))
	ids := make([]int64, len(usage))
	err = d.write(ctx, func(tx *wtx) error {
		if len(msgs) > 0 {
			if err := appendTx(tx, key, turn, msgs, bodies, atUS); err != nil {
				return fmt.Errorf("append %d messages: %w", len(msgs), err)
			}
		}
		for i, r := range usage {
			id, err := s.insertUsage(tx, r)
			if err != nil {
				return fmt.Errorf("record usage entry %d: %w", i, err)
			}
			ids[i] = id
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
