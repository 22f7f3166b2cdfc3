// Command vectors measures nearest-neighbour search of the knowledge store: latency (p50/p99)
// and recall@10 against exact search, on PostgreSQL + pgvector (HNSW) and on SQLite.
//
//	go run ./bench/vectors                                # SQLite 10k × 1536
//	DATABASE_URL=postgres://… go run ./bench/vectors -pg  # plus PostgreSQL 100k × 1536
//
// The vectors are clustered like real embeddings (1000 centroids plus noise, unit length); the
// queries are perturbed copies of stored vectors. Exact top-10 is computed in Go by brute force.
// It reports figures; it never fails on them.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/sqlite"
)

// store is the knowledge-store surface the benchmark drives (both backends have it).
type store interface {
	EnsureEmbeddingDims(ctx context.Context, dims int) error
	PutDocument(ctx context.Context, doc memrec.Document, chunks []memrec.Chunk) error
	SearchChunksVector(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error)
}

func main() {
	dims := flag.Int("dims", 1536, "vector dimensions")
	sqliteN := flag.Int("sqlite", 10000, "vectors in the SQLite run (0 skips it)")
	pgN := flag.Int("pgn", 100000, "vectors in the PostgreSQL run")
	pg := flag.Bool("pg", false, "run PostgreSQL too (needs DATABASE_URL)")
	queries := flag.Int("queries", 200, "queries per run")
	ef := flag.Int("ef", 0, "pgvector hnsw.ef_search (0: the store's default)")
	reuse := flag.String("pgschema", "", "reuse a schema loaded by an earlier -pg run (same -pgn and -dims) instead of loading again")
	flag.Parse()
	ctx := context.Background()
	fmt.Printf("nearest-neighbour search, %d dimensions, %d queries, top 10, clustered unit vectors\n", *dims, *queries)
	fmt.Printf("%-22s %9s %10s %10s %10s %12s\n", "store", "vectors", "p50", "p99", "recall@10", "load")
	if *sqliteN > 0 {
		dir, err := os.MkdirTemp("", "echogate-vec-")
		must(err)
		defer os.RemoveAll(dir)
		s, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "v.db")}, nil)
		must(err)
		must(s.Open(ctx))
		must(s.Migrate(ctx))
		run(ctx, "sqlite (exact scan)", s, *sqliteN, *dims, *queries)
		s.Close()
	}
	if *pg {
		url := os.Getenv("DATABASE_URL")
		if url == "" {
			fmt.Fprintln(os.Stderr, "-pg needs DATABASE_URL (scripts/pg-test-cluster.sh start)")
			os.Exit(2)
		}
		schema := *reuse
		if schema == "" {
			schema = "bench_vectors_" + strconv.FormatInt(time.Now().Unix(), 10)
		}
		s, err := postgres.New(postgres.Config{URL: url, Schema: schema, EfSearch: *ef}, nil)
		must(err)
		must(s.Open(ctx))
		must(s.Migrate(ctx))
		fmt.Fprintf(os.Stderr, "postgres schema %s (reuse it with -pgschema %s)\n", schema, schema)
		loaded = *reuse != ""
		run(ctx, "postgres (pgvector HNSW)", s, *pgN, *dims, *queries)
		s.Close()
	}
}

// loaded says the store already holds this run's vectors.
var loaded bool

func run(ctx context.Context, name string, s store, n, dims, queries int) {
	rng := rand.New(rand.NewPCG(1, 2))
	centroids := make([][]float32, 1000)
	for i := range centroids {
		centroids[i] = randomUnit(rng, dims, nil, 0)
	}
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = randomUnit(rng, dims, centroids[rng.IntN(len(centroids))], 0.35)
	}
	must(s.EnsureEmbeddingDims(ctx, dims))
	start := time.Now()
	const perDoc = 1000
	for d := 0; d*perDoc < n && !loaded; d++ {
		id := fmt.Sprintf("d%06d", d)
		var chunks []memrec.Chunk
		for i := d * perDoc; i < min(n, (d+1)*perDoc); i++ {
			chunks = append(chunks, memrec.Chunk{DocID: id, Seq: i - d*perDoc, Text: "passage " + strconv.Itoa(i), Embedding: vecs[i]})
		}
		must(s.PutDocument(ctx, memrec.Document{ID: id, Source: "/bench/" + id, Title: id, MIME: "text/plain",
			ContentHash: id, Chunks: len(chunks), AddedAt: time.Now(), UpdatedAt: time.Now()}, chunks))
	}
	load := time.Since(start)

	var lat []time.Duration
	var hits, total int
	for q := 0; q < queries; q++ {
		query := randomUnit(rng, dims, vecs[rng.IntN(n)], 0.2)
		exact := exactTop10(vecs, query)
		t0 := time.Now()
		got, err := s.SearchChunksVector(ctx, memrec.PassageQuery{Vector: query, Limit: 10})
		lat = append(lat, time.Since(t0))
		must(err)
		for _, p := range got {
			d, _ := strconv.Atoi(p.DocID[1:])
			if exact[d*perDoc+p.Seq] {
				hits++
			}
		}
		total += 10
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("%-22s %9d %10s %10s %10.3f %12s\n", name, n, pct(lat, 50), pct(lat, 99), float64(hits)/float64(total), load.Round(time.Second))
}

// randomUnit returns a unit vector: around center (with noise scale) or uniformly random.
func randomUnit(rng *rand.Rand, dims int, center []float32, noise float64) []float32 {
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x := rng.NormFloat64()
		if center != nil {
			x = float64(center[i])*math.Sqrt(float64(dims)) + noise*x
		}
		v[i] = float32(x)
		norm += x * x
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

func exactTop10(vecs [][]float32, q []float32) map[int]bool {
	type hit struct {
		i int
		s float32
	}
	top := make([]hit, 0, 11)
	for i, v := range vecs {
		var s float32
		for j := range v {
			s += v[j] * q[j]
		}
		if len(top) < 10 || s > top[len(top)-1].s {
			top = append(top, hit{i, s})
			sort.Slice(top, func(a, b int) bool { return top[a].s > top[b].s })
			if len(top) > 10 {
				top = top[:10]
			}
		}
	}
	out := make(map[int]bool, 10)
	for _, h := range top {
		out[h.i] = true
	}
	return out
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i].Round(10 * time.Microsecond)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "vectors:", err)
		os.Exit(1)
	}
}
