package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/echogate/echogate/internal/memrec"
)

// ErrDims is wrapped when a vector's size differs from the one the database holds.
var ErrDims = memrec.ErrDims

// ErrLeaseLost is wrapped by CompleteConsolidation and ReleaseConsolidation when another worker
// has taken the job over: nothing was written.
var ErrLeaseLost = memrec.ErrLeaseLost

const vectorSpace = "embeddings"

// EnsureEmbeddingDims records dims as the size of the store's vectors on first use, creating the
// HNSW index of the knowledge chunks for that size, and checks it afterwards: a database holding
// vectors of another size fails with an error wrapping ErrDims that names embeddings.dimensions.
// Replicas starting together are serialized by a transaction-level advisory lock. It blocks on a
// few round trips (index creation on an empty table is instant; on a large one it takes a while).
func (s *Store) EnsureEmbeddingDims(ctx context.Context, dims int) error {
	if dims <= 0 || dims > 16000 {
		return fmt.Errorf("postgres: embedding dimensions %d: %w: must be between 1 and 16000 (embeddings.dimensions)", dims, ErrInvalid)
	}
	p, err := s.pool(ctx, "embedding dimensions")
	if err != nil {
		return err
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('echogate:vector_meta', 0))"); err != nil {
			return err
		}
		var have int
		err := tx.QueryRow(ctx, "SELECT dims FROM vector_meta WHERE name = $1", vectorSpace).Scan(&have)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := tx.Exec(ctx, "INSERT INTO vector_meta (name, dims) VALUES ($1, $2)", vectorSpace, dims); err != nil {
				return err
			}
		case err != nil:
			return err
		case have != dims:
			return dimsError(have, dims)
		}
		// HNSW indexes support up to 2000 dimensions of vector; larger ones are searched exactly.
		if dims <= maxIndexedDims {
			_, err = tx.Exec(ctx, fmt.Sprintf("CREATE INDEX IF NOT EXISTS kb_chunks_hnsw_%d ON kb_chunks USING hnsw ((embedding::vector(%d)) vector_cosine_ops)", dims, dims))
		}
		return err
	})
	if err != nil {
		return fail(ctx, err, "embedding dimensions")
	}
	return nil
}

func dimsError(have, got int) error {
	return fmt.Errorf("%w: the database holds %d-dimensional embeddings, got %d: set embeddings.dimensions to %d, or re-create the memory and knowledge tables (knowledge rm + add) for the new model",
		ErrDims, have, got, have)
}

// dimsOf returns the recorded vector size, 0 when none is recorded yet.
func dimsOf(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var have int
	err := q.QueryRow(ctx, "SELECT dims FROM vector_meta WHERE name = $1", vectorSpace).Scan(&have)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return have, err
}

func checkDims(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, n int) error {
	have, err := dimsOf(ctx, q)
	if err != nil {
		return err
	}
	if have != 0 && have != n {
		return dimsError(have, n)
	}
	return nil
}

// vecArg maps a vector to a query argument (NULL for none).
func vecArg(v []float32) any {
	if len(v) == 0 {
		return nil
	}
	return pgvector.NewVector(v)
}

func vecOf(v *pgvector.Vector) []float32 {
	if v == nil {
		return nil
	}
	return v.Slice()
}

const maxQueryTerms = 32

// tsQuery turns free text into a to_tsquery('english', …) argument: its words, OR-ed. The words
// hold only letters and digits, so no tsquery syntax passes through. "" when there are none.
func tsQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	seen := map[string]bool{}
	var terms []string
	for _, w := range words {
		if seen[w] || len(terms) >= maxQueryTerms {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
	}
	return strings.Join(terms, " | ")
}

// maxIndexedDims is the largest vector pgvector's HNSW index takes; larger ones are searched
// exactly.
const maxIndexedDims = 2000
