package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
)

const qPendingByPrompt = `SELECT ` + pendingCols + ` FROM pending WHERE prompt_id = ? AND prompt_channel = ? AND prompt_platform = ?`

// PendingByPrompt returns the paused turn whose prompt is the message ref (so a reaction on
// the prompt finds its session after a restart), or an error wrapping ErrNotFound.
func (s *Store) PendingByPrompt(ctx context.Context, ref echogate.MessageRef) (echogate.PendingTurn, error) {
	if ref.ID == "" {
		return echogate.PendingTurn{}, fmt.Errorf("sqlite: pending of prompt: %w: empty message id", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.PendingTurn{}, fmt.Errorf("sqlite: pending of prompt %s: %w", ref.ID, err)
	}
	st, err := d.read(ctx, qPendingByPrompt)
	if err != nil {
		return echogate.PendingTurn{}, fail(ctx, err, "pending of prompt %s", ref.ID)
	}
	p, err := scanPending(st.QueryRowContext(ctx, ref.ID, ref.Channel, ref.Platform))
	if errors.Is(err, sql.ErrNoRows) {
		return echogate.PendingTurn{}, fmt.Errorf("sqlite: pending of prompt %s in %s: %w", ref.ID, ref.Channel, ErrNotFound)
	}
	if err != nil {
		return echogate.PendingTurn{}, fail(ctx, err, "pending of prompt %s", ref.ID)
	}
	return p, nil
}
