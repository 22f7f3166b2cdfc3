package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate/internal/memrec"
)

// TestReaderPoolsMapping: the read pool serving the turn path does not map the file (SQLite
// drops a mapping after every commit, so each turn's reads paid an munmap and a remap); the
// vector-scan pool does, and the vector searches use it.
func TestReaderPoolsMapping(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := context.Background()
	d, err := s.conns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		db   *sql.DB
		want int64
	}{
		{"read pool", d.r, 0},
		{"vector-scan pool", d.v, 268435456},
		{"event log read pool", d.ev.r, 0},
	} {
		var got int64
		if err := tc.db.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&got); err != nil {
			t.Fatalf("%s: PRAGMA mmap_size: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: mmap_size = %d, want %d", tc.name, got, tc.want)
		}
	}
	if d.ev.v != nil {
		t.Errorf("event log has a vector-scan pool; it holds no vectors")
	}
}

// TestVectorSearchesOnScanPool: both exact vector searches are prepared on the vector-scan
// pool, the text searches on the read pool.
func TestVectorSearchesOnScanPool(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := context.Background()
	if err := s.EnsureEmbeddingDims(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SearchChunksVector(ctx, memrec.PassageQuery{Vector: []float32{1, 0, 0}}); err != nil {
		t.Fatalf("SearchChunksVector: %v", err)
	}
	if _, err := s.SearchMemoriesVector(ctx, memrec.MemoryQuery{Owners: []string{"u"}, Vector: []float32{1, 0, 0}}); err != nil {
		t.Fatalf("SearchMemoriesVector: %v", err)
	}
	if _, err := s.SearchChunksText(ctx, memrec.PassageQuery{Text: "hello"}); err != nil {
		t.Fatalf("SearchChunksText: %v", err)
	}
	d, _ := s.conns(ctx)
	count := func(m *sync.Map, vec bool) (n int) {
		m.Range(func(k, _ any) bool {
			if strings.Contains(k.(string), "vec_distance") == vec {
				n++
			}
			return true
		})
		return n
	}
	if got := count(&d.vStmts, true); got != 2 {
		t.Errorf("vector searches prepared on the scan pool = %d, want 2", got)
	}
	if got := count(&d.rStmts, true); got != 0 {
		t.Errorf("vector searches prepared on the read pool = %d, want 0", got)
	}
	if got := count(&d.vStmts, false); got != 0 {
		t.Errorf("other queries prepared on the scan pool = %d, want 0", got)
	}
}
