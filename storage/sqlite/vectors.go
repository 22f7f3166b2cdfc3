package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/echogate/echogate/internal/memrec"

	_ "modernc.org/sqlite/vec" // sqlite-vec: vec_distance_cosine for the memory and knowledge tables
)

// ErrDims is wrapped when a vector's size differs from the one the database holds.
var ErrDims = memrec.ErrDims

// vectorSpace names the one vector space of the store (memories and knowledge chunks share it).
const vectorSpace = "embeddings"

// EnsureEmbeddingDims records dims as the size of the store's vectors on first use and checks it
// afterwards: a store filled with vectors of another size fails with an error wrapping ErrDims
// that names embeddings.dimensions. It blocks on one write; call it at start.
func (s *Store) EnsureEmbeddingDims(ctx context.Context, dims int) error {
	if dims <= 0 {
		return fmt.Errorf("sqlite: embedding dimensions %d: %w: must be positive (embeddings.dimensions)", dims, ErrInvalid)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: embedding dimensions: %w", err)
	}
	err = d.write(ctx, func(tx *wtx) error { return checkDims(tx, dims) })
	if err != nil {
		return fail(ctx, err, "embedding dimensions")
	}
	return nil
}

// checkDims verifies (and on first use records) the vector size inside a write transaction.
func checkDims(tx *wtx, dims int) error {
	var have int
	err := tx.queryRow("SELECT dims FROM vector_meta WHERE name = ?", []any{vectorSpace}, &have)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.exec("INSERT INTO vector_meta (name, dims) VALUES (?, ?)", vectorSpace, dims)
		return err
	case err != nil:
		return err
	case have != dims:
		return dimsError(have, dims)
	}
	return nil
}

func dimsError(have, got int) error {
	return fmt.Errorf("%w: the database holds %d-dimensional embeddings, got %d: set embeddings.dimensions to %d, or re-create the memory and knowledge tables (knowledge rm + add) for the new model",
		ErrDims, have, got, have)
}

// readDims returns the recorded vector size, 0 when none is recorded yet.
func (d *dbs) readDims(ctx context.Context) (int, error) {
	st, err := d.read(ctx, "SELECT dims FROM vector_meta WHERE name = ?")
	if err != nil {
		return 0, err
	}
	var have int
	err = st.QueryRowContext(ctx, vectorSpace).Scan(&have)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return have, err
}

// checkQueryDims fails when v does not match the stored size.
func (d *dbs) checkQueryDims(ctx context.Context, v []float32) error {
	have, err := d.readDims(ctx)
	if err != nil {
		return err
	}
	if have != 0 && have != len(v) {
		return dimsError(have, len(v))
	}
	return nil
}

// vecBlob encodes v in sqlite-vec's float32 format; nil for no vector.
func vecBlob(v []float32) any {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func blobVec(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// maxQueryTerms bounds the terms of a full-text query.
const maxQueryTerms = 32

// ftsQuery turns free text into an FTS5 query: its words, quoted (so no FTS5 syntax passes
// through), joined with OR and ranked by bm25. It returns "" when the text has no words.
func ftsQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	seen := map[string]bool{}
	var terms []string
	for _, w := range words {
		if seen[w] || len(terms) >= maxQueryTerms {
			continue
		}
		seen[w] = true
		terms = append(terms, `"`+w+`"`)
	}
	return strings.Join(terms, " OR ")
}

// placeholders returns "?, ?, ?" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
