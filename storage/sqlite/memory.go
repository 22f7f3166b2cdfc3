package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

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
