package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate/internal/memrec"
)

const docCols = `id, source, title, mime, content_hash, bytes, chunks, added_at, updated_at, embed_model`

func scanDoc(r pgx.Row) (memrec.Document, error) {
	var doc memrec.Document
	err := r.Scan(&doc.ID, &doc.Source, &doc.Title, &doc.MIME, &doc.ContentHash, &doc.Bytes, &doc.Chunks, &doc.AddedAt, &doc.UpdatedAt, &doc.EmbedModel)
	doc.AddedAt, doc.UpdatedAt = doc.AddedAt.UTC(), doc.UpdatedAt.UTC()
	return doc, err
}

// GetDocument returns the knowledge-base document whose id or source is idOrSource.
func (s *Store) GetDocument(ctx context.Context, idOrSource string) (memrec.Document, error) {
	p, err := s.pool(ctx, fmt.Sprintf("get document %q", idOrSource))
	if err != nil {
		return memrec.Document{}, err
	}
	doc, err := scanDoc(p.QueryRow(ctx, "SELECT "+docCols+" FROM kb_documents WHERE id = $1 OR source = $1 LIMIT 1", idOrSource))
	if errors.Is(err, pgx.ErrNoRows) {
		return memrec.Document{}, fmt.Errorf("postgres: get document %q: %w", idOrSource, ErrNotFound)
	}
	if err != nil {
		return memrec.Document{}, fail(ctx, err, "get document %q", idOrSource)
	}
	return doc, nil
}

// PutDocument stores doc with its chunks in one transaction, replacing a document of the same
// id or source and all its old chunks: a reader sees the old version or the new, never a mix.
func (s *Store) PutDocument(ctx context.Context, doc memrec.Document, chunks []memrec.Chunk) error {
	if doc.ID == "" || doc.Source == "" {
		return fmt.Errorf("postgres: put document %q: %w: id and source are required", doc.Source, ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("put document %q", doc.Source))
	if err != nil {
		return err
	}
	added := utc(s.stamp(doc.AddedAt))
	upd := doc.UpdatedAt
	if upd.IsZero() {
		upd = s.now()
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		var old time.Time
		err := tx.QueryRow(ctx, "SELECT added_at FROM kb_documents WHERE id = $1 OR source = $2 FOR UPDATE", doc.ID, doc.Source).Scan(&old)
		switch {
		case err == nil:
			added = old
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM kb_chunks WHERE doc_id IN (SELECT id FROM kb_documents WHERE id = $1 OR source = $2)", doc.ID, doc.Source); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM kb_documents WHERE id = $1 OR source = $2", doc.ID, doc.Source); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO kb_documents ("+docCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
			doc.ID, doc.Source, doc.Title, doc.MIME, doc.ContentHash, doc.Bytes, len(chunks), added, utc(upd), doc.EmbedModel); err != nil {
			return err
		}
		checked := false
		var b pgx.Batch
		for _, c := range chunks {
			if strings.TrimSpace(c.Text) == "" {
				return fmt.Errorf("%w: chunk %d of %s is empty", ErrInvalid, c.Seq, doc.Source)
			}
			if len(c.Embedding) > 0 && !checked {
				if err := checkDims(ctx, tx, len(c.Embedding)); err != nil {
					return err
				}
				checked = true
			}
			b.Queue("INSERT INTO kb_chunks (doc_id, seq, heading, text, start_off, end_off, embedding) VALUES ($1, $2, $3, $4, $5, $6, $7)",
				doc.ID, c.Seq, c.Heading, c.Text, c.Start, c.End, vecArg(c.Embedding))
		}
		if b.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fail(ctx, err, "put document %q", doc.Source)
	}
	return nil
}

// ListDocuments lists the knowledge base, most recently updated first.
func (s *Store) ListDocuments(ctx context.Context, limit int) ([]memrec.Document, error) {
	p, err := s.pool(ctx, "list documents")
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, "SELECT "+docCols+" FROM kb_documents ORDER BY updated_at DESC, id LIMIT $1", sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "list documents")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memrec.Document, error) { return scanDoc(r) })
	if err != nil {
		return nil, fail(ctx, err, "list documents")
	}
	return out, nil
}

// DeleteDocument removes a document (by id or source) and its chunks. Unknown ones wrap
// ErrNotFound.
func (s *Store) DeleteDocument(ctx context.Context, idOrSource string) error {
	p, err := s.pool(ctx, fmt.Sprintf("delete document %q", idOrSource))
	if err != nil {
		return err
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM kb_chunks WHERE doc_id IN (SELECT id FROM kb_documents WHERE id = $1 OR source = $1)", idOrSource); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, "DELETE FROM kb_documents WHERE id = $1 OR source = $1", idOrSource)
		if err == nil && tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return err
	})
	if err != nil {
		return fail(ctx, err, "delete document %q", idOrSource)
	}
	return nil
}

const passageCols = `c.doc_id, c.seq, d.source, d.title, c.heading, c.text, c.start_off, c.end_off, d.embed_model`

// SearchChunksVector returns the chunks nearest to q.Vector by cosine distance, best first
// (Score = cosine similarity). With up to 2000 dimensions it uses the HNSW index
// (approximate; hnsw.ef_search bounds the candidates).
func (s *Store) SearchChunksVector(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error) {
	p, err := s.pool(ctx, "search knowledge")
	if err != nil {
		return nil, err
	}
	if len(q.Vector) == 0 {
		return nil, fmt.Errorf("postgres: search knowledge: %w: no vector", ErrInvalid)
	}
	if err := checkDims(ctx, p, len(q.Vector)); err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	n := len(q.Vector)
	sql := fmt.Sprintf("SELECT %s, (c.embedding::vector(%d)) <=> $1::vector(%d) AS dist FROM kb_chunks c JOIN kb_documents d ON d.id = c.doc_id WHERE c.embedding IS NOT NULL ORDER BY dist LIMIT %d",
		passageCols, n, n, searchLimit(q.Limit))
	if n > maxIndexedDims {
		rows, err := p.Query(ctx, sql, vecArg(q.Vector))
		return passages(ctx, rows, err, func(v float64) float64 { return 1 - v })
	}
	// Vectors this large live out of line (TOAST), so the planner believes a sequential scan is
	// cheap and skips the HNSW index (bench/vectors: 570 ms instead of 2 ms at 100k passages). The
	// query runs in a transaction that turns sequential scans off for itself and sets the HNSW
	// candidate list (hnsw.ef_search) for the recall we want.
	var out []memrec.Passage
	err = pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('enable_seqscan', 'off', true), set_config('hnsw.ef_search', $1, true)",
			strconv.Itoa(s.efSearch)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sql, vecArg(q.Vector))
		out, err = passages(ctx, rows, err, func(v float64) float64 { return 1 - v })
		return err
	})
	if err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	return out, nil
}

// SearchChunksText returns the chunks matching the words of q.Text (any of them), ranked by
// ts_rank_cd (headings weigh more), best first.
func (s *Store) SearchChunksText(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error) {
	p, err := s.pool(ctx, "search knowledge")
	if err != nil {
		return nil, err
	}
	tq := tsQuery(q.Text)
	if tq == "" {
		return nil, nil
	}
	rows, err := p.Query(ctx, "SELECT "+passageCols+", ts_rank_cd(c.tsv, query) AS r FROM kb_chunks c JOIN kb_documents d ON d.id = c.doc_id, to_tsquery('english', $1) query WHERE c.tsv @@ query ORDER BY r DESC, c.doc_id, c.seq LIMIT $2",
		tq, searchLimit(q.Limit))
	return passages(ctx, rows, err, func(v float64) float64 { return v })
}

func passages(ctx context.Context, rows pgx.Rows, err error, score func(float64) float64) ([]memrec.Passage, error) {
	if err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memrec.Passage, error) {
		var (
			p memrec.Passage
			v float64
		)
		err := r.Scan(&p.DocID, &p.Seq, &p.Source, &p.Title, &p.Heading, &p.Text, &p.Start, &p.End, &p.EmbedModel, &v)
		p.Score = score(v)
		return p, err
	})
	if err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	for i := range out {
		out[i].Rank = i + 1
	}
	return out, nil
}
