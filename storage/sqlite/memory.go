package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// ErrLeaseLost is wrapped by CompleteConsolidation and ReleaseConsolidation when the job's lease
// was taken over by another worker (this worker ran past its lease): nothing was written.
var ErrLeaseLost = memrec.ErrLeaseLost

const memoryCols = `id, owner, text, kind, importance, pinned, embedding, session, source_turn, created_at, updated_at, expires_at, superseded_by, superseded_at, embed_model`

type rowScanner interface{ Scan(dest ...any) error }

func scanMemory(r rowScanner, extra ...any) (memrec.Memory, error) {
	var (
		m                memrec.Memory
		pinned           int64
		emb              []byte
		created, updated int64
		expires, supAt   sql.NullInt64
	)
	dest := append([]any{&m.ID, &m.Owner, &m.Text, &m.Kind, &m.Importance, &pinned, &emb, &m.Session, &m.SourceTurn,
		&created, &updated, &expires, &m.SupersededBy, &supAt, &m.EmbedModel}, extra...)
	if err := r.Scan(dest...); err != nil {
		return m, err
	}
	m.Pinned = pinned != 0
	m.Embedding = blobVec(emb)
	m.CreatedAt, m.UpdatedAt = fromMicros(created), fromMicros(updated)
	m.ExpiresAt, m.SupersededAt = fromOptMicros(expires), fromOptMicros(supAt)
	return m, nil
}

func validMemory(m memrec.Memory) error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: memory without id", ErrInvalid)
	case m.Owner == "":
		return fmt.Errorf("%w: memory %s without owner", ErrInvalid, m.ID)
	case strings.TrimSpace(m.Text) == "":
		return fmt.Errorf("%w: memory %s has no text", ErrInvalid, m.ID)
	}
	return nil
}

const qPutMemory = `INSERT INTO memories (` + memoryCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, text = excluded.text, kind = excluded.kind,
 importance = excluded.importance, pinned = excluded.pinned, embedding = excluded.embedding,
 session = excluded.session, source_turn = excluded.source_turn, updated_at = excluded.updated_at,
 expires_at = excluded.expires_at, superseded_by = excluded.superseded_by, superseded_at = excluded.superseded_at,
 embed_model = excluded.embed_model`

func (s *Store) putMemory(tx *wtx, m memrec.Memory) error {
	if err := validMemory(m); err != nil {
		return err
	}
	if len(m.Embedding) > 0 {
		if err := checkDims(tx, len(m.Embedding)); err != nil {
			return err
		}
	}
	created := s.stamp(m.CreatedAt)
	updated := m.UpdatedAt
	if updated.IsZero() {
		updated = created
	}
	_, err := tx.exec(qPutMemory, m.ID, m.Owner, m.Text, m.Kind, m.Importance, boolInt(m.Pinned), vecBlob(m.Embedding),
		m.Session, m.SourceTurn, toMicros(created), toMicros(updated), optMicros(m.ExpiresAt), m.SupersededBy, optMicros(m.SupersededAt), vecModel(m))
	return err
}

// vecModel is the embed_model stored with m: its EmbedModel when it has a vector, else empty.
func vecModel(m memrec.Memory) string {
	if len(m.Embedding) == 0 {
		return ""
	}
	return m.EmbedModel
}

// PutMemory inserts m, or replaces the memory with m's id (its CreatedAt is kept). A zero
// CreatedAt means now; a zero UpdatedAt means CreatedAt. A vector of another size than the
// store's fails with ErrDims.
func (s *Store) PutMemory(ctx context.Context, m memrec.Memory) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: put memory %q: %w", m.ID, err)
	}
	if err := d.write(ctx, func(tx *wtx) error { return s.putMemory(tx, m) }); err != nil {
		return fail(ctx, err, "put memory %q", m.ID)
	}
	return nil
}

// GetMemory returns one memory (also a superseded or expired one).
func (s *Store) GetMemory(ctx context.Context, id string) (memrec.Memory, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return memrec.Memory{}, fmt.Errorf("sqlite: get memory %q: %w", id, err)
	}
	st, err := d.read(ctx, "SELECT "+memoryCols+" FROM memories WHERE id = ?")
	if err != nil {
		return memrec.Memory{}, fail(ctx, err, "get memory %q", id)
	}
	m, err := scanMemory(st.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return memrec.Memory{}, fmt.Errorf("sqlite: get memory %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return memrec.Memory{}, fail(ctx, err, "get memory %q", id)
	}
	return m, nil
}

// memoryFilterWhere is the WHERE clause of f (empty when f matches everything) and its arguments.
func (s *Store) memoryFilterWhere(f memrec.MemoryFilter) (string, []any) {
	var (
		conds []string
		args  []any
	)
	if len(f.Owners) > 0 {
		conds = append(conds, "owner IN ("+placeholders(len(f.Owners))+")")
		for _, o := range f.Owners {
			args = append(args, o)
		}
	}
	if f.Current {
		conds = append(conds, "superseded_by = ''", "(expires_at IS NULL OR expires_at > ?)")
		args = append(args, toMicros(s.stamp(f.Now)))
	}
	if f.Pinned {
		conds = append(conds, "pinned = 1")
	}
	if f.StaleFor != "" {
		// A memory without a vector has embed_model '' (PutMemory and updates keep the two
		// together), so one indexed comparison selects both kinds of stale memory.
		// Two ranges rather than <>, which no index serves.
		conds = append(conds, "(embed_model < ? OR embed_model > ?)")
		args = append(args, f.StaleFor, f.StaleFor)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// ListMemories lists memories matching f, most recently updated first.
func (s *Store) ListMemories(ctx context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list memories: %w", err)
	}
	where, args := s.memoryFilterWhere(f)
	q := "SELECT " + memoryCols + " FROM memories" + where + " ORDER BY updated_at DESC, id DESC LIMIT ?"
	args = append(args, sqlLimit(f.Limit))
	return s.queryMemories(ctx, d, "list memories", q, args)
}

// CountMemories counts the memories matching f (f.Limit is ignored).
func (s *Store) CountMemories(ctx context.Context, f memrec.MemoryFilter) (int, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count memories: %w", err)
	}
	where, args := s.memoryFilterWhere(f)
	st, err := d.read(ctx, "SELECT count(*) FROM memories"+where)
	if err != nil {
		return 0, fail(ctx, err, "count memories")
	}
	var n int
	if err := st.QueryRowContext(ctx, args...).Scan(&n); err != nil {
		return 0, fail(ctx, err, "count memories")
	}
	return n, nil
}

func (s *Store) queryMemories(ctx context.Context, d *dbs, op, q string, args []any) ([]memrec.Memory, error) {
	return queryAll(ctx, d, op, q, args, func(r rowScanner) (memrec.Memory, error) { return scanMemory(r) })
}

// DeleteMemory removes one memory for good. Unknown ids wrap ErrNotFound.
func (s *Store) DeleteMemory(ctx context.Context, id string) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: delete memory %q: %w", id, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		n, err := tx.rowsAffected("DELETE FROM memories WHERE id = ?", id)
		if err == nil && n == 0 {
			return ErrNotFound
		}
		return err
	})
	if err != nil {
		return fail(ctx, err, "delete memory %q", id)
	}
	return nil
}

func memoryQueryArgs(q memrec.MemoryQuery, now time.Time) (string, []any, error) {
	if len(q.Owners) == 0 {
		return "", nil, fmt.Errorf("%w: memory search without owners", ErrInvalid)
	}
	args := make([]any, 0, len(q.Owners)+1)
	for _, o := range q.Owners {
		args = append(args, o)
	}
	args = append(args, toMicros(now))
	return "m.owner IN (" + placeholders(len(q.Owners)) + ") AND m.superseded_by = '' AND (m.expires_at IS NULL OR m.expires_at > ?)", args, nil
}

func searchLimit(n int) int {
	if n <= 0 {
		return 10
	}
	return n
}

// SearchMemoriesVector returns the owners' current memories nearest to q.Vector by cosine
// distance, best first (Score = cosine similarity). Memories without a vector are not found, nor,
// when q.EmbedModel is set, those whose vector another embedder made.
func (s *Store) SearchMemoriesVector(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search memories: %w", err)
	}
	if len(q.Vector) == 0 {
		return nil, fmt.Errorf("sqlite: search memories: %w: no vector", ErrInvalid)
	}
	if err := d.checkQueryDims(ctx, q.Vector); err != nil {
		return nil, fail(ctx, err, "search memories")
	}
	where, args, err := memoryQueryArgs(q, s.stamp(q.Now))
	if err != nil {
		return nil, fmt.Errorf("sqlite: search memories: %w", err)
	}
	if q.EmbedModel != "" {
		where += " AND m.embed_model = ?"
		args = append(args, q.EmbedModel)
	}
	query := "SELECT " + prefixed("m.", memoryCols) + ", v.dist FROM (SELECT m.rowid, vec_distance_cosine(m.embedding, ?) AS dist FROM memories m WHERE " + where +
		" AND m.embedding IS NOT NULL ORDER BY dist LIMIT ?) v JOIN memories m ON m.rowid = v.rowid ORDER BY v.dist"
	args = append([]any{vecBlob(q.Vector)}, args...)
	args = append(args, searchLimit(q.Limit))
	return s.scoredMemories(ctx, d.scan, query, args, func(dist float64) float64 { return 1 - dist })
}

// SearchMemoriesText returns the owners' current memories matching the words of q.Text (any
// of them), ranked by bm25, best first.
func (s *Store) SearchMemoriesText(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search memories: %w", err)
	}
	fq := ftsQuery(q.Text)
	if fq == "" {
		return nil, nil
	}
	where, args, err := memoryQueryArgs(q, s.stamp(q.Now))
	if err != nil {
		return nil, fmt.Errorf("sqlite: search memories: %w", err)
	}
	var owners []string
	for _, o := range q.Owners {
		owners = append(owners, `owner : "`+strings.ReplaceAll(o, `"`, `""`)+`"`)
	}
	fq = "(" + strings.Join(owners, " OR ") + ") AND text : (" + fq + ")"
	// Rank inside FTS5 first (ORDER BY rank LIMIT), then join; superseded and expired rows are
	// filtered after ranking, so the inner limit leaves room for them.
	query := "SELECT " + prefixed("m.", memoryCols) + ", f.rank FROM (SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN memories m ON m.rowid = f.rowid WHERE " +
		where + " ORDER BY f.rank LIMIT ?"
	args = append([]any{fq, 4*searchLimit(q.Limit) + 20}, args...)
	args = append(args, searchLimit(q.Limit))
	return s.scoredMemories(ctx, d.read, query, args, func(r float64) float64 { return -r })
}

// scoredMemories runs query, prepared by prep (a pool's), and scans its rows.
func (s *Store) scoredMemories(ctx context.Context, prep func(context.Context, string) (*sql.Stmt, error), query string, args []any, score func(float64) float64) ([]memrec.ScoredMemory, error) {
	st, err := prep(ctx, query)
	if err != nil {
		return nil, fail(ctx, err, "search memories")
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fail(ctx, err, "search memories")
	}
	defer rows.Close()
	var out []memrec.ScoredMemory
	for rows.Next() {
		var v float64
		m, err := scanMemory(rows, &v)
		if err != nil {
			return nil, fail(ctx, err, "search memories")
		}
		out = append(out, memrec.ScoredMemory{Memory: m, Rank: len(out) + 1, Score: score(v)})
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "search memories")
	}
	return out, nil
}

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = p + parts[i]
	}
	return strings.Join(parts, ", ")
}

// MessagesBy returns up to limit transcript entries of the session with Seq > after that belong
// to turns of userID (the turn's qualified user: its requester), oldest first. The consolidation
// worker reads the part of one person's conversation it has not seen; other people's turns in a
// shared session are not theirs to be credited with.
func (s *Store) MessagesBy(ctx context.Context, key echogate.SessionKey, userID string, after int64, limit int) ([]echogate.StoredMessage, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: messages of %q: %w", key, err)
	}
	st, err := d.read(ctx, `SELECT m.seq, m.turn, m.body, m.at FROM messages m JOIN turns t ON t.id = m.turn
WHERE m.session = ? AND m.seq > ? AND t.user_id = ? ORDER BY m.seq LIMIT ?`)
	if err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	rows, err := st.QueryContext(ctx, string(key), after, userID, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	defer rows.Close()
	var out []echogate.StoredMessage
	for rows.Next() {
		var (
			m    = echogate.StoredMessage{Session: key}
			body []byte
			at   int64
		)
		if err := rows.Scan(&m.Seq, &m.Turn, &body, &at); err != nil {
			return nil, fail(ctx, err, "messages of %q", key)
		}
		if err := json.Unmarshal(body, &m.Message); err != nil {
			return nil, fmt.Errorf("sqlite: messages of %q: decode seq %d: %w", key, m.Seq, err)
		}
		m.At = fromMicros(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "messages of %q", key)
	}
	return out, nil
}

// EnqueueConsolidation schedules the consolidation of j.UserID's part of the session at j.DueAt
// (debounced: a job already pending moves to j.DueAt, but never past the notAfter of its first
// enqueue). Each (session, user) has a job and a cursor of its own; the enqueue keeps the
// cursor and records the latest channel. A new job starts at the session's floor (see
// migration 0012).
func (s *Store) EnqueueConsolidation(ctx context.Context, j memrec.ConsolidationJob, notAfter time.Time) error {
	if j.Session == "" {
		return fmt.Errorf("sqlite: enqueue consolidation: %w: empty session", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: enqueue consolidation of %q: %w", j.Session, err)
	}
	due := s.stamp(j.DueAt)
	if notAfter.Before(due) {
		notAfter = due
	}
	err = d.write(ctx, func(tx *wtx) error {
		_, err := tx.exec(`INSERT INTO memory_jobs (session, user_id, channel, cursor, due_at, not_after, gen, updated_at)
VALUES (?, ?, ?, coalesce((SELECT cursor FROM memory_floors WHERE session = ?), 0), ?, ?, 1, ?)
ON CONFLICT (session, user_id) DO UPDATE SET channel = excluded.channel, gen = gen + 1,
 due_at = CASE WHEN due_at IS NULL THEN excluded.due_at ELSE min(excluded.due_at, coalesce(not_after, excluded.due_at)) END,
 not_after = CASE WHEN due_at IS NULL THEN excluded.not_after ELSE not_after END,
 updated_at = excluded.updated_at`,
			j.Session, j.UserID, j.Channel, j.Session, toMicros(due), toMicros(notAfter), toMicros(s.now()))
		return err
	})
	if err != nil {
		return fail(ctx, err, "enqueue consolidation of %q", j.Session)
	}
	return nil
}

// The consolidation state of a session goes with its transcript (DeleteSession, PruneSessions):
// a session started again under the same key numbers its messages from 1, below the old cursors.
const (
	qDeleteMemoryJobs  = `DELETE FROM memory_jobs WHERE session = ?`
	qDeleteMemoryFloor = `DELETE FROM memory_floors WHERE session = ?`
)

const jobCols = `session, user_id, channel, cursor, attempts, due_at, worker, gen, lease_until, last_error`

func scanJob(r rowScanner) (memrec.ConsolidationJob, error) {
	var (
		j          memrec.ConsolidationJob
		due, lease sql.NullInt64
	)
	err := r.Scan(&j.Session, &j.UserID, &j.Channel, &j.Cursor, &j.Attempts, &due, &j.Worker, &j.Gen, &lease, &j.LastError)
	j.DueAt, j.LeaseUntil = fromOptMicros(due), fromOptMicros(lease)
	return j, err
}

// ClaimConsolidation takes the oldest due job whose lease is free (or expired) for worker until
// now+lease, counting an attempt. ok is false when no job is due. Two workers never hold one
// session's job at once: the claim is one write transaction.
func (s *Store) ClaimConsolidation(ctx context.Context, worker string, now time.Time, lease time.Duration) (memrec.ConsolidationJob, bool, error) {
	if worker == "" || lease <= 0 {
		return memrec.ConsolidationJob{}, false, fmt.Errorf("sqlite: claim consolidation: %w: need a worker id and a positive lease", ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return memrec.ConsolidationJob{}, false, fmt.Errorf("sqlite: claim consolidation: %w", err)
	}
	var (
		j  memrec.ConsolidationJob
		ok bool
	)
	n := toMicros(now)
	err = d.write(ctx, func(tx *wtx) error {
		st, err := tx.stmt(`UPDATE memory_jobs SET worker = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
WHERE rowid = (SELECT rowid FROM memory_jobs WHERE due_at IS NOT NULL AND due_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
 ORDER BY due_at LIMIT 1)
RETURNING ` + jobCols)
		if err != nil {
			return err
		}
		j, err = scanJob(st.QueryRowContext(tx.ctx, worker, toMicros(now.Add(lease)), n, n, n))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	if err != nil {
		return memrec.ConsolidationJob{}, false, fail(ctx, err, "claim consolidation")
	}
	return j, ok, nil
}

// holdsLease checks inside a write transaction that j's claim is still the current one.
func holdsLease(tx *wtx, j memrec.ConsolidationJob) error {
	var worker string
	var lease sql.NullInt64
	err := tx.queryRow("SELECT worker, lease_until FROM memory_jobs WHERE session = ? AND user_id = ?", []any{j.Session, j.UserID}, &worker, &lease)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (worker != j.Worker || !lease.Valid || lease.Int64 != toMicros(j.LeaseUntil))) {
		return ErrLeaseLost
	}
	return err
}

// CompleteConsolidation applies res and advances the session's cursor in one transaction, and
// frees the lease. The job stays pending when the session was enqueued again after the claim.
// It fails with ErrLeaseLost (writing nothing) when another worker has taken the job over.
func (s *Store) CompleteConsolidation(ctx context.Context, j memrec.ConsolidationJob, res memrec.ConsolidationResult) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: complete consolidation of %q: %w", j.Session, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		if err := holdsLease(tx, j); err != nil {
			return err
		}
		for _, m := range res.Insert {
			if err := s.putMemory(tx, m); err != nil {
				return err
			}
		}
		for _, m := range res.Update {
			if len(m.Embedding) > 0 {
				if err := checkDims(tx, len(m.Embedding)); err != nil {
					return err
				}
			}
			n, err := tx.rowsAffected(`UPDATE memories SET text = ?, kind = ?, importance = ?, embedding = coalesce(?, embedding),
 embed_model = CASE WHEN ? THEN ? ELSE embed_model END, updated_at = ?, expires_at = ?, source_turn = ? WHERE id = ?`,
				m.Text, m.Kind, m.Importance, vecBlob(m.Embedding), boolInt(len(m.Embedding) > 0), m.EmbedModel, toMicros(s.stamp(m.UpdatedAt)), optMicros(m.ExpiresAt), m.SourceTurn, m.ID)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("update memory %q: %w", m.ID, ErrNotFound)
			}
		}
		for _, sp := range res.Supersede {
			if _, err := tx.exec("UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ? AND superseded_by = ''",
				sp.New, toMicros(s.stamp(sp.At)), sp.Old); err != nil {
				return err
			}
		}
		if !res.ExpireBefore.IsZero() && res.ExpireOwner != "" {
			if _, err := tx.exec("DELETE FROM memories WHERE owner = ? AND expires_at IS NOT NULL AND expires_at <= ?",
				res.ExpireOwner, toMicros(res.ExpireBefore)); err != nil {
				return err
			}
		}
		_, err := tx.exec(`UPDATE memory_jobs SET cursor = max(cursor, ?), worker = '', lease_until = NULL, attempts = 0, last_error = '',
 due_at = CASE WHEN gen = ? THEN NULL ELSE due_at END, not_after = CASE WHEN gen = ? THEN NULL ELSE not_after END, updated_at = ? WHERE session = ? AND user_id = ?`,
			res.Cursor, j.Gen, j.Gen, toMicros(s.now()), j.Session, j.UserID)
		return err
	})
	if err != nil {
		return fail(ctx, err, "complete consolidation of %q", j.Session)
	}
	return nil
}

// ReleaseConsolidation gives the job back after a failure or a deferral: it runs again at
// retryAt (zero: not until the session is enqueued again), with errText recorded. It fails with
// ErrLeaseLost when another worker has taken the job over.
func (s *Store) ReleaseConsolidation(ctx context.Context, j memrec.ConsolidationJob, retryAt time.Time, errText string) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: release consolidation of %q: %w", j.Session, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		if err := holdsLease(tx, j); err != nil {
			return err
		}
		_, err := tx.exec(`UPDATE memory_jobs SET worker = '', lease_until = NULL, last_error = ?, updated_at = ?,
 due_at = ?, not_after = CASE WHEN ? IS NULL THEN NULL ELSE not_after END, attempts = CASE WHEN ? IS NULL THEN 0 ELSE attempts END WHERE session = ? AND user_id = ?`,
			errText, toMicros(s.now()), optMicros(retryAt), optMicros(retryAt), optMicros(retryAt), j.Session, j.UserID)
		return err
	})
	if err != nil {
		return fail(ctx, err, "release consolidation of %q", j.Session)
	}
	return nil
}

// ConsolidationState returns the consolidation row of userID in the session (cursor, pending
// job); unknown ones wrap ErrNotFound.
func (s *Store) ConsolidationState(ctx context.Context, session, userID string) (memrec.ConsolidationJob, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return memrec.ConsolidationJob{}, fmt.Errorf("sqlite: consolidation state of %q: %w", session, err)
	}
	st, err := d.read(ctx, "SELECT "+jobCols+" FROM memory_jobs WHERE session = ? AND user_id = ?")
	if err != nil {
		return memrec.ConsolidationJob{}, fail(ctx, err, "consolidation state of %q", session)
	}
	j, err := scanJob(st.QueryRowContext(ctx, session, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return memrec.ConsolidationJob{}, fmt.Errorf("sqlite: consolidation state of %q for %q: %w", session, userID, ErrNotFound)
	}
	if err != nil {
		return memrec.ConsolidationJob{}, fail(ctx, err, "consolidation state of %q", session)
	}
	return j, nil
}
