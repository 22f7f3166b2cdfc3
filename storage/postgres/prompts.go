package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

const qPendingByPrompt = `SELECT ` + pendingCols + ` FROM pending WHERE prompt_id = $1 AND prompt_channel = $2 AND prompt_platform = $3`

// PendingByPrompt returns the paused turn whose prompt is the message ref (so a reaction on
// the prompt finds its session on any replica, after a restart), or an error wrapping
// ErrNotFound.
func (s *Store) PendingByPrompt(ctx context.Context, ref echogate.MessageRef) (echogate.PendingTurn, error) {
	if ref.ID == "" {
		return echogate.PendingTurn{}, fmt.Errorf("postgres: pending of prompt: %w: empty message id", ErrInvalid)
	}
	pool, err := s.pool(ctx, fmt.Sprintf("pending of prompt %s", ref.ID))
	if err != nil {
		return echogate.PendingTurn{}, err
	}
	p, err := scanPending(pool.QueryRow(ctx, qPendingByPrompt, ref.ID, ref.Channel, ref.Platform))
	if errors.Is(err, pgx.ErrNoRows) {
		return echogate.PendingTurn{}, fmt.Errorf("postgres: pending of prompt %s in %s: %w", ref.ID, ref.Channel, ErrNotFound)
	}
	if err != nil {
		return echogate.PendingTurn{}, fail(ctx, err, "pending of prompt %s", ref.ID)
	}
	return p, nil
}
