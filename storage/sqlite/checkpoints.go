package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
)

// keepCheckpoints is how many checkpoints per session SaveCheckpoint keeps (the newest).
const keepCheckpoints = 3

const (
	qInsertCheckpoint = `INSERT INTO checkpoints (session, covers_seq, turn, body, created_at) VALUES (?, ?, ?, ?, ?)`
	// The subquery is NULL while the session has at most keepCheckpoints rows: nothing goes.
	qPruneCheckpoints = `DELETE FROM checkpoints WHERE session = ? AND id <
  (SELECT id FROM checkpoints WHERE session = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`
	qLatestCheckpoint = `SELECT covers_seq, turn, body, created_at FROM checkpoints WHERE session = ? ORDER BY id DESC LIMIT 1`
)

// SaveCheckpoint stores cp as the newest checkpoint of cp.Session: cp.Seq is the last transcript
// Seq it summarizes, cp.Message the checkpoint message, cp.Turn the turn that made it (may be
// empty), cp.At when (zero: now). Older checkpoints beyond the newest few are removed in the same
// transaction. Deleting the session removes its checkpoints.
func (s *Store) SaveCheckpoint(ctx context.Context, cp echogate.StoredMessage) error {
	switch {
	case cp.Session == "":
		return fmt.Errorf("sqlite: save checkpoint: %w: empty session key", ErrInvalid)
	case cp.Seq < 0:
		return fmt.Errorf("sqlite: save checkpoint of %q: %w: negative covered seq %d", cp.Session, ErrInvalid, cp.Seq)
	case cp.Message.Content == "":
		return fmt.Errorf("sqlite: save checkpoint of %q: %w: empty checkpoint text", cp.Session, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: save checkpoint of %q: %w", cp.Session, err)
	}
	body, err := json.Marshal(cp.Message)
	if err != nil {
		return fmt.Errorf("sqlite: save checkpoint of %q: encode message: %w", cp.Session, err)
	}
	key := string(cp.Session)
	err = d.write(ctx, func(tx *wtx) error {
		s.cps.add(cp.Session) // before the commit: LatestCheckpoint never misses it
		if _, err := tx.exec(qInsertCheckpoint, key, cp.Seq, cp.Turn, string(body), toMicros(s.stamp(cp.At))); err != nil {
			return err
		}
		_, err := tx.exec(qPruneCheckpoints, key, key, keepCheckpoints-1)
		return err
	})
	if err != nil {
		return fail(ctx, err, "save checkpoint of %q", cp.Session)
	}
	return nil
}

// LatestCheckpoint returns the newest checkpoint of the session (fields as SaveCheckpoint
// describes), or an error wrapping ErrNotFound when it has none. A session this store knows
// to have none is answered without a read (cpindex.go).
func (s *Store) LatestCheckpoint(ctx context.Context, key echogate.SessionKey) (echogate.StoredMessage, error) {
	if s.cps.none(key) {
		return echogate.StoredMessage{}, fmt.Errorf("sqlite: latest checkpoint of %q: %w", key, ErrNotFound)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.StoredMessage{}, fmt.Errorf("sqlite: latest checkpoint of %q: %w", key, err)
	}
	st, err := d.read(ctx, qLatestCheckpoint)
	if err != nil {
		return echogate.StoredMessage{}, fail(ctx, err, "latest checkpoint of %q", key)
	}
	cp := echogate.StoredMessage{Session: key}
	var (
		body []byte
		at   int64
	)
	err = st.QueryRowContext(ctx, string(key)).Scan(&cp.Seq, &cp.Turn, &body, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return echogate.StoredMessage{}, fmt.Errorf("sqlite: latest checkpoint of %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return echogate.StoredMessage{}, fail(ctx, err, "latest checkpoint of %q", key)
	}
	if err := json.Unmarshal(body, &cp.Message); err != nil {
		return echogate.StoredMessage{}, fmt.Errorf("sqlite: latest checkpoint of %q: decode message: %w", key, err)
	}
	cp.At = fromMicros(at)
	return cp, nil
}
