package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/echogate/echogate"
)

const (
	// A later upsert never moves UpdatedAt backwards and fills a user id the first one lacked;
	// the conversation, creation time and ephemeral flag are those of the first upsert.
	qUpsertSession = `INSERT INTO sessions
(key, platform, workspace, channel, thread, dm, user_id, ephemeral, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
  updated_at = max(sessions.updated_at, excluded.updated_at),
  user_id = CASE WHEN sessions.user_id = '' THEN excluded.user_id ELSE sessions.user_id END`
	sessionCols   = `key, platform, workspace, channel, thread, dm, user_id, ephemeral, created_at, updated_at`
	qGetSession   = `SELECT ` + sessionCols + ` FROM sessions WHERE key = ?`
	qListSessions = `SELECT ` + sessionCols + ` FROM sessions ORDER BY updated_at DESC, key DESC LIMIT ?`

	qDeleteSession  = `DELETE FROM sessions WHERE key = ?`
	qDeleteMessages = `DELETE FROM messages WHERE session = ?`
	qDeletePendingS = `DELETE FROM pending WHERE session = ?`
	qDeleteGrants   = `DELETE FROM grants WHERE session = ?`

	qMaxSeq        = `SELECT coalesce(max(seq), 0) FROM messages WHERE session = ?`
	qInsertMessage = `INSERT INTO messages (session, seq, turn, role, body, at) VALUES (?, ?, ?, ?, ?, ?)`
	qHistory       = `SELECT seq, turn, body, at FROM messages WHERE session = ? ORDER BY seq DESC LIMIT ?`
	// The anchor row and what follows; the anchor's body is not needed.
	qHistorySince = `SELECT seq, turn, CASE WHEN seq > ? THEN body END, at FROM messages WHERE session = ? AND seq >= ? ORDER BY seq LIMIT ?`

	qGrantTool = `INSERT INTO grants (session, user_id, tool, granted_by, granted_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (session, user_id, tool) DO NOTHING`
	qGrants = `SELECT tool, granted_by FROM grants WHERE session = ? AND user_id = ?`
)

// UpsertSession creates the session or, when it exists, bumps its UpdatedAt (never backwards)
// and fills a missing UserID. Zero CreatedAt/UpdatedAt default to each other, then to now.
func (s *Store) UpsertSession(ctx context.Context, si echogate.SessionInfo) error {
	if si.Key == "" {
		return fmt.Errorf("sqlite: upsert session: %w: empty key", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: upsert session %q: %w", si.Key, err)
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
	err = d.write(ctx, func(tx *wtx) error {
		_, err := tx.exec(qUpsertSession, string(si.Key), c.Platform, c.Workspace, c.Channel, c.Thread, boolInt(c.DM),
			si.UserID, boolInt(si.Ephemeral), toMicros(created), toMicros(updated))
		return err
	})
	if err != nil {
		return fail(ctx, err, "upsert session %q", si.Key)
	}
	return nil
}

func scanSession(row interface{ Scan(...any) error }) (echogate.SessionInfo, error) {
	var (
		si               echogate.SessionInfo
		dm, eph          int64
		created, updated int64
		key              string
	)
	c := &si.Conversation
	if err := row.Scan(&key, &c.Platform, &c.Workspace, &c.Channel, &c.Thread, &dm, &si.UserID, &eph, &created, &updated); err != nil {
		return si, err
	}
	si.Key = echogate.SessionKey(key)
	c.DM = dm != 0
	si.Ephemeral = eph != 0
	si.CreatedAt = fromMicros(created)
	si.UpdatedAt = fromMicros(updated)
	return si, nil
}

// GetSession returns the session, or an error wrapping ErrNotFound.
func (s *Store) GetSession(ctx context.Context, key echogate.SessionKey) (echogate.SessionInfo, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.SessionInfo{}, fmt.Errorf("sqlite: get session %q: %w", key, err)
	}
	st, err := d.read(ctx, qGetSession)
	if err != nil {
		return echogate.SessionInfo{}, fail(ctx, err, "get session %q", key)
	}
	si, err := scanSession(st.QueryRowContext(ctx, string(key)))
	if errors.Is(err, sql.ErrNoRows) {
		return echogate.SessionInfo{}, fmt.Errorf("sqlite: get session %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return echogate.SessionInfo{}, fail(ctx, err, "get session %q", key)
	}
	return si, nil
}

// ListSessions lists sessions, most recently updated first (limit <= 0: all).
func (s *Store) ListSessions(ctx context.Context, limit int) ([]echogate.SessionInfo, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	st, err := d.read(ctx, qListSessions)
	if err != nil {
		return nil, fail(ctx, err, "list sessions")
	}
	rows, err := st.QueryContext(ctx, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "list sessions")
	}
	defer rows.Close()
	var out []echogate.SessionInfo
	for rows.Next() {
		si, err := scanSession(rows)
		if err != nil {
			return nil, fail(ctx, err, "list sessions")
		}
		out = append(out, si)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list sessions")
	}
	return out, nil
}

// DeleteSession removes the session with its transcript, pending turn and grants, in one
// transaction. Turns and the usage ledger are kept (money spent stays on the books). A session
// that does not exist wraps ErrNotFound (after removing any orphaned transcript under its key).
func (s *Store) DeleteSession(ctx context.Context, key echogate.SessionKey) error {
	if key == "" {
		return fmt.Errorf("sqlite: delete session: %w: empty key", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: delete session %q: %w", key, err)
	}
	var found bool
	err = d.write(ctx, func(tx *wtx) error {
		tx.w.seqs.forget(key)
		for _, q := range []string{qDeleteMessages, qDeletePendingS, qDeleteGrants, qDeleteMemoryJobs, qDeleteMemoryFloor} {
			if _, err := tx.exec(q, string(key)); err != nil {
				return err
			}
		}
		n, err := tx.rowsAffected(qDeleteSession, string(key))
		found = n > 0
		return err
	})
	if err != nil {
		return fail(ctx, err, "delete session %q", key)
	}
	if !found {
		return fmt.Errorf("sqlite: delete session %q: %w", key, ErrNotFound)
	}
	return nil
}

// AppendMessages appends msgs to the session's transcript atomically, numbering them
// with consecutive Seq values after the session's last one. at zero means now. Appending
// nothing is a no-op. The session row is not required.
func (s *Store) AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error {
	if key == "" {
		return fmt.Errorf("sqlite: append messages: %w: empty session key", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: append messages to %q: %w", key, err)
	}
	if len(msgs) == 0 {
		return nil
	}
	bodies := make([][]byte, len(msgs))
	for i, m := range msgs {
		if bodies[i], err = json.Marshal(m); err != nil {
			return fmt.Errorf("sqlite: append messages to %q: encode message %d: %w", key, i, err)
		}
	}
	atUS := toMicros(s.stamp(at))
	err = d.write(ctx, func(tx *wtx) error { return appendTx(tx, key, turn, msgs, bodies, atUS) })
	if err != nil {
		return fail(ctx, err, "append %d messages to %q", len(msgs), key)
	}
	return nil
}

// encodeMessages returns the JSON bodies of msgs.
func encodeMessages(msgs []echogate.Message) ([][]byte, error) {
	bodies := make([][]byte, len(msgs))
	for i, m := range msgs {
		var err error
		if bodies[i], err = json.Marshal(m); err != nil {
			return nil, fmt.Errorf("encode message %d: %w", i, err)
		}
	}
	return bodies, nil
}

// appendTx appends msgs (encoded as bodies) to the session's transcript in tx, numbered after
// its last entry.
func appendTx(tx *wtx, key echogate.SessionKey, turn string, msgs []echogate.Message, bodies [][]byte, atUS int64) error {
	seqs := &tx.w.seqs
	seq, cached := seqs.get(key)
	if !cached {
		if err := tx.queryRow(qMaxSeq, []any{string(key)}, &seq); err != nil {
			return err
		}
	}
	for i, m := range msgs {
		seq++
		_, err := tx.exec(qInsertMessage, string(key), seq, turn, string(m.Role), string(bodies[i]), atUS)
		if err != nil && i == 0 && cached && isUniqueViolation(err) {
			// The cached seq is behind (another process appended): ask the database.
			seqs.forget(key)
			if err := tx.queryRow(qMaxSeq, []any{string(key)}, &seq); err != nil {
				return err
			}
			seq++
			_, err = tx.exec(qInsertMessage, string(key), seq, turn, string(m.Role), string(bodies[i]), atUS)
		}
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	seqs.set(key, seq)
	return nil
}

// History returns the last `limit` transcript entries of the session (limit <= 0: all), oldest
// first. An unknown session has an empty history.
func (s *Store) History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: history of %q: %w", key, err)
	}
	st, err := d.read(ctx, qHistory)
	if err != nil {
		return nil, fail(ctx, err, "history of %q", key)
	}
	rows, err := st.QueryContext(ctx, string(key), sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "history of %q", key)
	}
	defer rows.Close()
	var out []echogate.StoredMessage
	var body []byte
	for rows.Next() {
		var (
			m  = echogate.StoredMessage{Session: key}
			at int64
		)
		if err := rows.Scan(&m.Seq, &m.Turn, &body, &at); err != nil {
			return nil, fail(ctx, err, "history of %q", key)
		}
		if err := json.Unmarshal(body, &m.Message); err != nil {
			return nil, fmt.Errorf("sqlite: history of %q: decode message seq %d: %w", key, m.Seq, err)
		}
		m.At = fromMicros(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "history of %q", key)
	}
	slices.Reverse(out)
	return out, nil
}

// HistorySince returns the transcript entries after `after` (compared by Seq, Turn and At),
// oldest first; ok is false when that entry is gone or changed, or when more than limit
// entries follow it (limit > 0). See pipeline.SessionStore.
func (s *Store) HistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int) ([]echogate.StoredMessage, bool, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: history of %q since %d: %w", key, after.Seq, err)
	}
	st, err := d.read(ctx, qHistorySince)
	if err != nil {
		return nil, false, fail(ctx, err, "history of %q since %d", key, after.Seq)
	}
	rowLimit := int64(-1)
	if limit > 0 {
		rowLimit = int64(limit) + 2 // the anchor, the entries, and one to tell "more than limit"
	}
	rows, err := st.QueryContext(ctx, after.Seq, string(key), after.Seq, rowLimit)
	if err != nil {
		return nil, false, fail(ctx, err, "history of %q since %d", key, after.Seq)
	}
	defer rows.Close()
	var (
		out    []echogate.StoredMessage
		body   []byte
		anchor bool
	)
	for rows.Next() {
		var (
			m  = echogate.StoredMessage{Session: key}
			at int64
		)
		if err := rows.Scan(&m.Seq, &m.Turn, &body, &at); err != nil {
			return nil, false, fail(ctx, err, "history of %q since %d", key, after.Seq)
		}
		m.At = fromMicros(at)
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
			return nil, false, fmt.Errorf("sqlite: history of %q: decode message seq %d: %w", key, m.Seq, err)
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
		return fmt.Errorf("sqlite: grant tool %q in %q: %w: empty session key, user or tool name", tool, key, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: grant tool %q in %q: %w", tool, key, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		_, err := tx.exec(qGrantTool, string(key), user, tool, by, toMicros(s.stamp(at)))
		return err
	})
	if err != nil {
		return fail(ctx, err, "grant tool %q in %q", tool, key)
	}
	return nil
}

// Grants maps the tools granted to user in the session to who granted each (the user or an
// approver); none is an empty map.
func (s *Store) Grants(ctx context.Context, key echogate.SessionKey, user string) (map[string]string, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: grants of %q: %w", key, err)
	}
	st, err := d.read(ctx, qGrants)
	if err != nil {
		return nil, fail(ctx, err, "grants of %q", key)
	}
	rows, err := st.QueryContext(ctx, string(key), user)
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
