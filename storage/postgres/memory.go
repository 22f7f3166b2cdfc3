package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/echogate/echogate/internal/memrec"
)

const memoryCols = `id, owner, text, kind, importance, pinned, embedding, session, source_turn, created_at, updated_at, expires_at, superseded_by, superseded_at, embed_model`

func scanMemory(r pgx.Row, extra ...any) (memrec.Memory, error) {
	var (
		m              memrec.Memory
		emb            *pgvector.Vector
		expires, supAt *time.Time
	)
	dest := append([]any{&m.ID, &m.Owner, &m.Text, &m.Kind, &m.Importance, &m.Pinned, &emb, &m.Session, &m.SourceTurn,
		&m.CreatedAt, &m.UpdatedAt, &expires, &m.SupersededBy, &supAt, &m.EmbedModel}, extra...)
	if err := r.Scan(dest...); err != nil {
		return m, err
	}
	m.Embedding = vecOf(emb)
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	m.ExpiresAt, m.SupersededAt = fromOpt(expires), fromOpt(supAt)
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

const qPutMemory = `INSERT INTO memories (` + memoryCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, text = excluded.text, kind = excluded.kind,
 importance = excluded.importance, pinned = excluded.pinned, embedding = excluded.embedding,
 session = excluded.session, source_turn = excluded.source_turn, updated_at = excluded.updated_at,
 expires_at = excluded.expires_at, superseded_by = excluded.superseded_by, superseded_at = excluded.superseded_at,
 embed_model = excluded.embed_model`

func (s *Store) putMemory(ctx context.Context, tx pgx.Tx, m memrec.Memory) error {
	if err := validMemory(m); err != nil {
		return err
	}
	if len(m.Embedding) > 0 {
		if err := checkDims(ctx, tx, len(m.Embedding)); err != nil {
			return err
		}
	}
	created := utc(s.stamp(m.CreatedAt))
	updated := m.UpdatedAt
	if updated.IsZero() {
		updated = created
	}
	_, err := tx.Exec(ctx, qPutMemory, m.ID, m.Owner, m.Text, m.Kind, m.Importance, m.Pinned, vecArg(m.Embedding),
		m.Session, m.SourceTurn, created, utc(updated), optTime(m.ExpiresAt), m.SupersededBy, optTime(m.SupersededAt), vecModel(m))
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
	p, err := s.pool(ctx, fmt.Sprintf("put memory %q", m.ID))
	if err != nil {
		return err
	}
	if err := inTx(ctx, p, func(tx pgx.Tx) error { return s.putMemory(ctx, tx, m) }); err != nil {
		return fail(ctx, err, "put memory %q", m.ID)
	}
	return nil
}

// GetMemory returns one memory (also a superseded or expired one).
func (s *Store) GetMemory(ctx context.Context, id string) (memrec.Memory, error) {
	p, err := s.pool(ctx, fmt.Sprintf("get memory %q", id))
	if err != nil {
		return memrec.Memory{}, err
	}
	m, err := scanMemory(p.QueryRow(ctx, "SELECT "+memoryCols+" FROM memories WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return memrec.Memory{}, fmt.Errorf("postgres: get memory %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return memrec.Memory{}, fail(ctx, err, "get memory %q", id)
	}
	return m, nil
}

// ListMemories lists memories matching f, most recently updated first.
func (s *Store) ListMemories(ctx context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error) {
	p, err := s.pool(ctx, "list memories")
	if err != nil {
		return nil, err
	}
	where, args := s.memoryFilterWhere(f)
	q := "SELECT " + memoryCols + " FROM memories" + where + fmt.Sprintf(" ORDER BY updated_at DESC, id DESC LIMIT $%d", len(args)+1)
	rows, err := p.Query(ctx, q, append(args, sqlLimit(f.Limit))...)
	if err != nil {
		return nil, fail(ctx, err, "list memories")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memrec.Memory, error) { return scanMemory(r) })
	if err != nil {
		return nil, fail(ctx, err, "list memories")
	}
	return out, nil
}

// CountMemories counts the memories matching f (f.Limit is ignored).
func (s *Store) CountMemories(ctx context.Context, f memrec.MemoryFilter) (int, error) {
	p, err := s.pool(ctx, "count memories")
	if err != nil {
		return 0, err
	}
	where, args := s.memoryFilterWhere(f)
	var n int
	if err := p.QueryRow(ctx, "SELECT count(*) FROM memories"+where, args...).Scan(&n); err != nil {
		return 0, fail(ctx, err, "count memories")
	}
	return n, nil
}

// memoryFilterWhere is the WHERE clause of f (empty when f matches everything) and its arguments.
func (s *Store) memoryFilterWhere(f memrec.MemoryFilter) (string, []any) {
	var (
		conds []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if len(f.Owners) > 0 {
		conds = append(conds, "owner = ANY("+arg(f.Owners)+")")
	}
	if f.Current {
		conds = append(conds, "superseded_by = ''", "(expires_at IS NULL OR expires_at > "+arg(utc(s.stamp(f.Now)))+")")
	}
	if f.Pinned {
		conds = append(conds, "pinned")
	}
	if f.StaleFor != "" {
		// A memory without a vector has embed_model '' (PutMemory and updates keep the two
		// together), so one indexed comparison selects both kinds of stale memory.
		// Two ranges rather than <>, which no index serves.
		m := arg(f.StaleFor)
		conds = append(conds, "(embed_model < "+m+" OR embed_model > "+m+")")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// DeleteMemory removes one memory for good. Unknown ids wrap ErrNotFound.
func (s *Store) DeleteMemory(ctx context.Context, id string) error {
	p, err := s.pool(ctx, fmt.Sprintf("delete memory %q", id))
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, "DELETE FROM memories WHERE id = $1", id)
	if err != nil {
		return fail(ctx, err, "delete memory %q", id)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: delete memory %q: %w", id, ErrNotFound)
	}
	return nil
}

func searchLimit(n int) int {
	if n <= 0 {
		return 10
	}
	return n
}

const currentMemory = `m.owner = ANY($2) AND m.superseded_by = '' AND (m.expires_at IS NULL OR m.expires_at > $3)`

// SearchMemoriesVector returns the owners' current memories nearest to q.Vector by cosine
// distance (exact search within the owners), best first (Score = cosine similarity). When
// q.EmbedModel is set, vectors another embedder made are not compared.
func (s *Store) SearchMemoriesVector(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error) {
	p, err := s.pool(ctx, "search memories")
	if err != nil {
		return nil, err
	}
	if len(q.Vector) == 0 || len(q.Owners) == 0 {
		return nil, fmt.Errorf("postgres: search memories: %w: a vector and owners are required", ErrInvalid)
	}
	if err := checkDims(ctx, p, len(q.Vector)); err != nil {
		return nil, fail(ctx, err, "search memories")
	}
	// $5 = '' compares every vector (no embedder recorded by the caller).
	rows, err := p.Query(ctx, "SELECT "+prefixed("m.", memoryCols)+", m.embedding <=> $1 AS dist FROM memories m WHERE "+currentMemory+
		" AND m.embedding IS NOT NULL AND ($5 = '' OR m.embed_model = $5) ORDER BY dist LIMIT $4", pgvector.NewVector(q.Vector), q.Owners, utc(s.stamp(q.Now)), searchLimit(q.Limit), q.EmbedModel)
	return scored(ctx, rows, err, func(d float64) float64 { return 1 - d })
}

// SearchMemoriesText returns the owners' current memories matching the words of q.Text (any of
// them), ranked by ts_rank_cd, best first.
func (s *Store) SearchMemoriesText(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error) {
	p, err := s.pool(ctx, "search memories")
	if err != nil {
		return nil, err
	}
	if len(q.Owners) == 0 {
		return nil, fmt.Errorf("postgres: search memories: %w: owners are required", ErrInvalid)
	}
	tq := tsQuery(q.Text)
	if tq == "" {
		return nil, nil
	}
	rows, err := p.Query(ctx, "SELECT "+prefixed("m.", memoryCols)+", ts_rank_cd(m.tsv, query) AS r FROM memories m, to_tsquery('english', $1) query WHERE "+
		currentMemory+" AND m.tsv @@ query ORDER BY r DESC, m.updated_at DESC LIMIT $4", tq, q.Owners, utc(s.stamp(q.Now)), searchLimit(q.Limit))
	return scored(ctx, rows, err, func(r float64) float64 { return r })
}

func scored(ctx context.Context, rows pgx.Rows, err error, score func(float64) float64) ([]memrec.ScoredMemory, error) {
	if err != nil {
		return nil, fail(ctx, err, "search memories")
	}
	var out []memrec.ScoredMemory
	out, err = pgx.AppendRows(out, rows, func(r pgx.CollectableRow) (memrec.ScoredMemory, error) {
		var v float64
		m, err := scanMemory(r, &v)
		return memrec.ScoredMemory{Memory: m, Score: score(v)}, err
	})
	if err != nil {
		return nil, fail(ctx, err, "search memories")
	}
	for i := range out {
		out[i].Rank = i + 1
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
