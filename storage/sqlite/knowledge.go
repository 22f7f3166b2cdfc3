package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/echogate/echogate/internal/memrec"
)

const docCols = `id, source, title, mime, content_hash, bytes, chunks, added_at, updated_at, embed_model`

func scanDoc(r rowScanner) (memrec.Document, error) {
	var (
		doc        memrec.Document
		added, upd int64
	)
	err := r.Scan(&doc.ID, &doc.Source, &doc.Title, &doc.MIME, &doc.ContentHash, &doc.Bytes, &doc.Chunks, &added, &upd, &doc.EmbedModel)
	doc.AddedAt, doc.UpdatedAt = fromMicros(added), fromMicros(upd)
	return doc, err
}

// GetDocument returns the knowledge-base document whose id or source is idOrSource.
func (s *Store) GetDocument(ctx context.Context, idOrSource string) (memrec.Document, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return memrec.Document{}, fmt.Errorf("sqlite: get document %q: %w", idOrSource, err)
	}
	st, err := d.read(ctx, "SELECT "+docCols+" FROM kb_documents WHERE id = ? OR source = ? LIMIT 1")
	if err != nil {
		return memrec.Document{}, fail(ctx, err, "get document %q", idOrSource)
	}
	doc, err := scanDoc(st.QueryRowContext(ctx, idOrSource, idOrSource))
	if errors.Is(err, sql.ErrNoRows) {
		return memrec.Document{}, fmt.Errorf("sqlite: get document %q: %w", idOrSource, ErrNotFound)
	}
	if err != nil {
		return memrec.Document{}, fail(ctx, err, "get document %q", idOrSource)
	}
	return doc, nil
}

// PutDocument stores doc with its chunks in one transaction, replacing a document of the same
// id or source and all its old chunks: a reader sees the old version or the new, never a mix.
// doc.Chunks is set to len(chunks); a zero AddedAt means now (kept from the old version).
func (s *Store) PutDocument(ctx context.Context, doc memrec.Document, chunks []memrec.Chunk) error {
	if doc.ID == "" || doc.Source == "" {
		return fmt.Errorf("sqlite: put document %q: %w: id and source are required", doc.Source, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: put document %q: %w", doc.Source, err)
	}
	now := s.now()
	added := s.stamp(doc.AddedAt)
	upd := doc.UpdatedAt
	if upd.IsZero() {
		upd = now
	}
	err = d.write(ctx, func(tx *wtx) error {
		var old int64
		err := tx.queryRow("SELECT added_at FROM kb_documents WHERE id = ? OR source = ?", []any{doc.ID, doc.Source}, &old)
		switch {
		case err == nil:
			added = fromMicros(old)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := tx.exec("DELETE FROM kb_chunks WHERE doc_id IN (SELECT id FROM kb_documents WHERE id = ? OR source = ?)", doc.ID, doc.Source); err != nil {
			return err
		}
		if _, err := tx.exec("DELETE FROM kb_documents WHERE id = ? OR source = ?", doc.ID, doc.Source); err != nil {
			return err
		}
		if _, err := tx.exec("INSERT INTO kb_documents ("+docCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			doc.ID, doc.Source, doc.Title, doc.MIME, doc.ContentHash, doc.Bytes, len(chunks), toMicros(added), toMicros(upd), doc.EmbedModel); err != nil {
			return err
		}
		for _, c := range chunks {
			if strings.TrimSpace(c.Text) == "" {
				return fmt.Errorf("%w: chunk %d of %s is empty", ErrInvalid, c.Seq, doc.Source)
			}
			if len(c.Embedding) > 0 {
				if err := checkDims(tx, len(c.Embedding)); err != nil {
					return err
				}
			}
			if _, err := tx.exec("INSERT INTO kb_chunks (doc_id, seq, heading, text, start_off, end_off, embedding) VALUES (?, ?, ?, ?, ?, ?, ?)",
				doc.ID, c.Seq, c.Heading, c.Text, c.Start, c.End, vecBlob(c.Embedding)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail(ctx, err, "put document %q", doc.Source)
	}
	return nil
}

// ListDocuments lists the knowledge base, most recently updated first.
func (s *Store) ListDocuments(ctx context.Context, limit int) ([]memrec.Document, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list documents: %w", err)
	}
	st, err := d.read(ctx, "SELECT "+docCols+" FROM kb_documents ORDER BY updated_at DESC, id LIMIT ?")
	if err != nil {
		return nil, fail(ctx, err, "list documents")
	}
	rows, err := st.QueryContext(ctx, sqlLimit(limit))
	if err != nil {
		return nil, fail(ctx, err, "list documents")
	}
	defer rows.Close()
	var out []memrec.Document
	for rows.Next() {
		doc, err := scanDoc(rows)
		if err != nil {
			return nil, fail(ctx, err, "list documents")
		}
		out = append(out, doc)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list documents")
	}
	return out, nil
}

// DeleteDocument removes a document (by id or source) and its chunks. Unknown ones wrap
// ErrNotFound.
func (s *Store) DeleteDocument(ctx context.Context, idOrSource string) error {
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: delete document %q: %w", idOrSource, err)
	}
	err = d.write(ctx, func(tx *wtx) error {
		if _, err := tx.exec("DELETE FROM kb_chunks WHERE doc_id IN (SELECT id FROM kb_documents WHERE id = ? OR source = ?)", idOrSource, idOrSource); err != nil {
			return err
		}
		n, err := tx.rowsAffected("DELETE FROM kb_documents WHERE id = ? OR source = ?", idOrSource, idOrSource)
		if err == nil && n == 0 {
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
// (Score = cosine similarity).
func (s *Store) SearchChunksVector(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search knowledge: %w", err)
	}
	if len(q.Vector) == 0 {
		return nil, fmt.Errorf("sqlite: search knowledge: %w: no vector", ErrInvalid)
	}
	if err := d.checkQueryDims(ctx, q.Vector); err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	// Distances first over the vectors alone, then the join for the top hits only.
	return s.passages(ctx, d.scan, "SELECT "+passageCols+", v.dist FROM (SELECT rowid, vec_distance_cosine(embedding, ?) AS dist FROM kb_chunks WHERE embedding IS NOT NULL ORDER BY dist LIMIT ?) v JOIN kb_chunks c ON c.rowid = v.rowid JOIN kb_documents d ON d.id = c.doc_id ORDER BY v.dist",
		[]any{vecBlob(q.Vector), searchLimit(q.Limit)}, func(v float64) float64 { return 1 - v })
}

// SearchChunksText returns the chunks matching the words of q.Text (any of them), ranked by
// bm25 (headings weigh double), best first.
func (s *Store) SearchChunksText(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search knowledge: %w", err)
	}
	fq := ftsQuery(q.Text)
	if fq == "" {
		return nil, nil
	}
	// Rank inside FTS5 (ORDER BY rank LIMIT, bm25 with headings weighing double), then join.
	return s.passages(ctx, d.read, "SELECT "+passageCols+", f.rank FROM (SELECT rowid, rank FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN kb_chunks c ON c.rowid = f.rowid JOIN kb_documents d ON d.id = c.doc_id ORDER BY f.rank",
		[]any{fq, searchLimit(q.Limit)}, func(v float64) float64 { return -v })
}

// passages runs query, prepared by prep (a pool's), and scans its rows.
func (s *Store) passages(ctx context.Context, prep func(context.Context, string) (*sql.Stmt, error), query string, args []any, score func(float64) float64) ([]memrec.Passage, error) {
	st, err := prep(ctx, query)
	if err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	defer rows.Close()
	var out []memrec.Passage
	for rows.Next() {
		var (
			p memrec.Passage
			v float64
		)
		if err := rows.Scan(&p.DocID, &p.Seq, &p.Source, &p.Title, &p.Heading, &p.Text, &p.Start, &p.End, &p.EmbedModel, &v); err != nil {
			return nil, fail(ctx, err, "search knowledge")
		}
		p.Rank, p.Score = len(out)+1, score(v)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "search knowledge")
	}
	return out, nil
}
