package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/echogate/echogate"
	"github.com/jackc/pgx/v5"
)

const (
	// A later upsert never moves UpdatedAt backwards and fills a user id the first one lacked;
	// the conversation, creation time and ephemeral flag are those of the first upsert.
	qUpsertSession = `INSERT INTO sessions
(key, platform, workspace, channel, thread, dm, user_id, ephemeral, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (key) DO UPDATE SET
  updated_at = greatest(sessions.updated_at, excluded.updated_at),
  user_id = CASE WHEN sessions.user_id = '' THEN excluded.user_id ELSE sessions.user_id END`
	sessionCols   = `key, platform, workspace, channel, thread, dm, user_id, ephemeral, created_at, updated_at`
	qGetSession   = `SELECT ` + sessionCols + ` FROM sessions WHERE key = $1`
	qListSessions = `SELECT ` + sessionCols + ` FROM sessions ORDER BY updated_at DESC, key DESC LIMIT $1`

	// The anchor row and what follows; the anchor's body is not needed.
	qHistorySince = `SELECT seq, turn, CASE WHEN seq > $2 THEN body END, at FROM messages WHERE session = $1 AND seq >= $2 ORDER BY seq LIMIT $3`

	qDeleteMessages = `DELETE FROM messages WHERE session = $1`
	qDeleteSeq      = `DELETE FROM message_seqs WHERE session = $1`
	qDeletePendingS = `DELETE FROM pending WHERE session = $1`
	qDeleteGrants   = `DELETE FROM grants WHERE session = $1`
	qDeleteSession  = `DELETE FROM sessions WHERE key = $1`
	qDeleteResumesS = `DELETE FROM resumes WHERE session = $1`

	// One statement, so one round trip and its own transaction: the upsert of the counter takes
	// the row lock of the session's counter, so concurrent appends to one session queue on it
	// (also across replicas) and each gets its own consecutive range; the insert numbers the
	// batch from that range. The counter starts after the transcript's last seq, so a transcript
	// written without it stays ordered.
	qAppend = `WITH bump AS (
  INSERT INTO message_seqs AS m (session, last_seq)
  VALUES ($1, (SELECT coalesce(max(seq), 0) FROM messages WHERE session = $1) + $2)
  ON CONFLICT (session) DO UPDATE SET last_seq = m.last_seq + $2
  RETURNING last_seq
)
INSERT INTO messages (session, seq, turn, role, body, at)
SELECT $1, bump.last_seq - $2 + b.n, $3, b.role, b.body, $4
FROM bump, unnest($5::text[], $6::json[]) WITH ORDINALITY AS b(role, body, n)`
	qHistory = `SELECT seq, turn, body, at FROM messages WHERE session = $1 ORDER BY seq DESC LIMIT $2`

	qGrantTool = `INSERT INTO grants (session, user_id, tool, granted_by, granted_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (session, user_id, tool) DO NOTHING`
	qGrants = `SELECT tool, granted_by FROM grants WHERE session = $1 AND user_id = $2`
)

// UpsertSession creates the session or, when it exists, bumps its UpdatedAt (never backwards)
// and fills a missing UserID. Zero CreatedAt/UpdatedAt default to each other, then to now.
func (s *Store) UpsertSession(ctx context.Context, si echogate.SessionInfo) error {
	if si.Key == "" {
		return fmt.Errorf("postgres: upsert session: %w: empty key", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("upsert session %q", si.Key))
	if err != nil {
		return err
	}
	created, updated := si.CreatedAt, si.UpdatedAt
	switch {
	case created.IsZero() && updated.IsZero():
		created = s.now()
		updated = created
	case created.IsZero():
		created = updated
	case updated.IsZero():
		updated = created
	}
	c := si.Conversation
	_, err = p.Exec(ctx, qUpsertSession, string(si.Key), c.Platform, c.Workspace, c.Channel, c.Thread, c.DM,
		si.UserID, si.Ephemeral, utc(created), utc(updated))
	if err != nil {
		return fail(ctx, err, "upsert session %q", si.Key)
	}
	return nil
}

func scanSession(row pgx.Row) (echogate.SessionInfo, error) {
	var (
		si  echogate.SessionInfo
		key string
	)
	c := &si.Conversation
	if err := row.Scan(&key, &c.Platform, &c.Workspace, &c.Channel, &c.Thread, &c.DM, &si.UserID, &si.Ephemeral, &si.CreatedAt, &si.UpdatedAt); err != nil {
		return si, err
	}
	si.Key = echogate.SessionKey(key)
	si.CreatedAt = si.CreatedAt.UTC()
	si.UpdatedAt = si.UpdatedAt.UTC()
	return si, nil
}

// GetSession returns the session, or an error wrapping ErrNotFound.
func (s *Store) GetSession(ctx context.Context, key echogate.SessionKey) (echogate.SessionInfo, error) {
	p, err := s.pool(ctx, fmt.Sprintf("get session %q", key))
	if err != nil {
		return echogate.SessionInfo{}, err
	}
	si, err := scanSession(p.QueryRow(ctx, qGetSession, string(key)))
	if errors.Is(err, pgx.ErrNoRows) {
		return echogate.SessionInfo{}, fmt.Errorf("postgres: get session %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return echogate.SessionInfo{}, fail(ctx, err, "get session %q", key)
	}
	return si, nil
}

// ListSessions lists sessions, most recently updated first (limit <= 0: all).
func (s *Store) ListSessions(ctx context.Context, limit int) ([]echogate.SessionInfo, error) {
	p, err := s.pool(ctx, "list sessions")
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, qListSessions, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "list sessions")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (echogate.SessionInfo, error) { return scanSession(r) })
	if err != nil {
		return nil, fail(ctx, err, "list sessions")
	}
	return nilIfEmpty(out), nil
}

// DeleteSession removes the session with its transcript, pending turn and grants, in one
// transaction. Turns and the usage ledger are kept (money spent stays on the books). A session
// that does not exist wraps ErrNotFound (after removing any orphaned transcript under its key).
func (s *Store) DeleteSession(ctx context.Context, key echogate.SessionKey) error {
	if key == "" {
		return fmt.Errorf("postgres: delete session: %w: empty key", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("delete session %q", key))
	if err != nil {
		return err
	}
	var found bool
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		// The counter row first: it serializes with a concurrent AppendMessages, which then
		// either finishes before the delete or starts a fresh transcript after it.
		for _, q := range [...]string{qDeleteSeq, qDeleteMessages, qDeletePendingS, qDeleteResumesS, qDeleteGrants, qDeleteMemoryJobs, qDeleteMemoryFloor, qDeleteSession} {
			tag, err := tx.Exec(ctx, q, string(key))
			if err != nil {
				return err
			}
			found = tag.RowsAffected() > 0 // the last statement deletes the session row
		}
		return nil
	})
	if err != nil {
		return fail(ctx, err, "delete session %q", key)
	}
	if !found {
		return fmt.Errorf("postgres: delete session %q: %w", key, ErrNotFound)
	}
	return nil
}

// AppendMessages appends msgs to the session's transcript in one transaction, numbering them
// with consecutive Seq values after the session's last one. at zero means now. Appending
// nothing is a no-op. The session row is not required. Concurrent appends to one session, from
// this or another replica, are serialized by the session's counter row and never interleave.
func (s *Store) AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error {
	if key == "" {
		return fmt.Errorf("postgres: append messages: %w: empty session key", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("append messages to %q", key))
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	roles := make([]string, len(msgs))
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("postgres: append messages to %q: encode message %d: %w", key, i, err)
		}
		roles[i], bodies[i] = string(m.Role), string(b)
	}
	tag, err := p.Exec(ctx, qAppend, string(key), int64(len(msgs)), turn, utc(s.stamp(at)), roles, bodies)
	if err != nil {
		return fail(ctx, err, "append %d messages to %q", len(msgs), key)
	}
	if tag.RowsAffected() != int64(len(msgs)) {
		return fmt.Errorf("postgres: append %d messages to %q: inserted %d rows", len(msgs), key, tag.RowsAffected())
	}
	return nil
}

// History returns the last `limit` transcript entries of the session (limit <= 0: all), oldest
// first. An unknown session has an empty history.
func (s *Store) History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error) {
	p, err := s.pool(ctx, fmt.Sprintf("history of %q", key))
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, qHistory, string(key), sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "history of %q", key)
	}
	out, err := collectMessages(key, rows)
	if err != nil {
		return nil, fail(ctx, err, "history of %q", key)
	}
	slices.Reverse(out)
	return nilIfEmpty(out), nil
}

// HistorySince returns the transcript entries after `after` (compared by Seq, Turn and At),
// oldest first; ok is false when that entry is gone or changed, or when more than limit
// entries follow it (limit > 0). See pipeline.SessionStore.
func (s *Store) HistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int) ([]echogate.StoredMessage, bool, error) {
	p, err := s.pool(ctx, fmt.Sprintf("history of %q since %d", key, after.Seq))
	if err != nil {
		return nil, false, err
	}
	rows, err := p.Query(ctx, qHistorySince, string(key), after.Seq, historySinceLimit(limit))
	if err != nil {
		return nil, false, fail(ctx, err, "history of %q since %d", key, after.Seq)
	}
	return scanHistorySince(ctx, key, after, limit, rows)
}

// historySinceLimit is qHistorySince's row limit for limit (NULL when limit <= 0: none).
func historySinceLimit(limit int) any {
	if limit > 0 {
		return int64(limit) + 2 // the anchor, the entries, and one to tell "more than limit"
	}
	return nil
}

// scanHistorySince reads qHistorySince's rows as HistorySince returns them, and closes them.
func scanHistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int, rows pgx.Rows) ([]echogate.StoredMessage, bool, error) {
	defer rows.Close()
	var (
		out    []echogate.StoredMessage
		body   []byte
		anchor bool
	)
	for rows.Next() {
		m := echogate.StoredMessage{Session: key}
		if err := rows.Scan(&m.Seq, &m.Turn, &body, &m.At); err != nil {
			return nil, false, fail(ctx, err, "history of %q since %d", key, after.Seq)
		}
		m.At = m.At.UTC()
		if !anchor {
			if m.Seq != after.Seq || m.Turn != after.Turn || !m.At.Equal(after.At) {
				return nil, false, nil
			}
			anchor = true
			continue
		}
		if limit > 0 && len(out) == limit {
			return nil, false, nil
		}
		if err := json.Unmarshal(body, &m.Message); err != nil {
			return nil, false, fmt.Errorf("postgres: history of %q: decode message seq %d: %w", key, m.Seq, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fail(ctx, err, "history of %q since %d", key, after.Seq)
	}
	return out, anchor, nil
}

// GrantTool records that user's calls of tool are approved for the rest of the session, who
// decided it (by: the user or an approver) and when (zero means now). A grant is one person's:
// other users of the session still ask. Granting again is not an error and keeps the first
// grant.
func (s *Store) GrantTool(ctx context.Context, key echogate.SessionKey, user, tool, by string, at time.Time) error {
	if key == "" || tool == "" || user == "" {
		return fmt.Errorf("postgres: grant tool %q in %q: %w: empty session key, user or tool name", tool, key, ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("grant tool %q in %q", tool, key))
	if err != nil {
		return err
	}
	if _, err := p.Exec(ctx, qGrantTool, string(key), user, tool, by, utc(s.stamp(at))); err != nil {
		return fail(ctx, err, "grant tool %q in %q", tool, key)
	}
	return nil
}

// Grants maps the tools granted to user in the session to who granted each (the user or an
// approver); none is an empty map.
func (s *Store) Grants(ctx context.Context, key echogate.SessionKey, user string) (map[string]string, error) {
	p, err := s.pool(ctx, fmt.Sprintf("grants of %q", key))
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, qGrants, string(key), user)
	if err != nil {
		return nil, fail(ctx, err, "grants of %q", key)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var tool, by string
		if err := rows.Scan(&tool, &by); err != nil {
			return nil, fail(ctx, err, "grants of %q", key)
		}
		out[tool] = by
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "grants of %q", key)
	}
	return out, nil
}

// collectMessages reads rows of (seq, turn, body, at) as key's transcript entries, and closes
// them.
func collectMessages(key echogate.SessionKey, rows pgx.Rows) ([]echogate.StoredMessage, error) {
	var body []byte
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (echogate.StoredMessage, error) {
		m := echogate.StoredMessage{Session: key}
		if err := r.Scan(&m.Seq, &m.Turn, &body, &m.At); err != nil {
			return m, err
		}
		m.At = m.At.UTC()
		if err := json.Unmarshal(body, &m.Message); err != nil {
			return m, fmt.Errorf("decode message seq %d: %w", m.Seq, err)
		}
		return m, nil
	})
}
