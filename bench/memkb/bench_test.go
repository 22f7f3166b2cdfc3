// Package memkb benchmarks the ContextStage's memory and knowledge sections on the embedded
// SQLite store: BenchmarkContextSection times one turn's memory snapshot plus knowledge hits
// (query embedding, vector and full-text searches, fusion, rendering) with 100k memories and
// 10k knowledge chunks, and reports p50/p99 per turn.
//
// Vectors have 256 dimensions (ECHOGATE_BENCH_DIMS to change): generating 110k synthetic
// 1536-dimensional hash embeddings takes minutes on 2 cores, and the search cost grows
// linearly with the size. Embeddings come from a local hash embedder (no network), so the
// figures are the store's and the services' own cost.
package memkb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/embed"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/knowledge"
	"github.com/echogate/echogate/memory"
	"github.com/echogate/echogate/storage/sqlite"
)

type hashBackend struct{}

func (hashBackend) Embed(ctx context.Context, model string, dims int, texts []string) ([][]float32, echogate.Usage, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = agenttest.HashEmbedding(t, dims)
	}
	return out, echogate.Usage{Kind: echogate.UsageEmbedding, Model: model, InputTokens: int64(len(texts))}, nil
}

var words = []string{"editor", "helix", "zed", "vim", "coffee", "tea", "berlin", "paris", "golang", "rust", "deploy", "friday",
	"kubernetes", "postgres", "dog", "cat", "bicycle", "marathon", "piano", "guitar", "vegan", "spicy", "meeting", "standup",
	"holiday", "japan", "python", "typescript", "dashboard", "invoice", "budget", "release", "pipeline", "rollback", "alert"}

// vocabulary is the synthetic language: the words above plus 20,000 made-up ones, drawn with a
// Zipf distribution like natural text (a few very common words, a long tail of rare ones).
const vocabulary = 20_000

func sentence(r *rand.Rand, n int) string {
	z := rand.NewZipf(r, 1.1, 2, vocabulary-1)
	s := ""
	for i := range n {
		if i > 0 {
			s += " "
		}
		if k := int(z.Uint64()); k < len(words) {
			s += words[k]
		} else {
			s += "w" + strconv.Itoa(k)
		}
	}
	return s
}

const (
	nMemories = 100_000
	nUsers    = 100 // 1,000 memories each
	nDocs     = 1_000
	perDoc    = 10 // 10,000 chunks
)

// corpus is generated once per process (the benchmark function runs more than once).
var corpus struct {
	once sync.Once
	dir  string
	st   *sqlite.Store
	dims int
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if corpus.st != nil {
		corpus.st.Close()
	}
	if corpus.dir != "" {
		os.RemoveAll(corpus.dir)
	}
	os.Exit(code)
}

func BenchmarkContextSection(b *testing.B) {
	corpus.once.Do(func() { corpus.err = generate(b) })
	if corpus.err != nil {
		b.Fatal(corpus.err)
	}
	measure(b, corpus.st, corpus.dims)
}

func generate(b *testing.B) error {
	dims := 256
	if v, err := strconv.Atoi(os.Getenv("ECHOGATE_BENCH_DIMS")); err == nil && v > 0 {
		dims = v
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "echogate-bench-")
	if err != nil {
		return err
	}
	corpus.dir, corpus.dims = dir, dims
	st, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "bench.db")}, nil)
	if err != nil {
		return err
	}
	if err := st.Open(ctx); err != nil {
		return err
	}
	corpus.st = st
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	if err := st.EnsureEmbeddingDims(ctx, dims); err != nil {
		return err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			now := time.Now()
			for i := w; i < nMemories; i += 8 {
				text := sentence(r, 8)
				m := memrec.Memory{ID: fmt.Sprint("m_", i), Owner: memrec.UserOwner(fmt.Sprint("web:u", i%nUsers)), Text: text, Kind: memrec.KindFact,
					Importance: 0.5, Pinned: i%500 == 0, Embedding: agenttest.HashEmbedding(text, dims), CreatedAt: now, UpdatedAt: now}
				if err := st.PutMemory(ctx, m); err != nil {
					errs <- err
					return
				}
			}
			for d := w; d < nDocs; d += 8 {
				doc := memrec.Document{ID: fmt.Sprint("d_", d), Source: fmt.Sprintf("/kb/doc%d.md", d), Title: fmt.Sprint("Doc ", d)}
				cs := make([]memrec.Chunk, perDoc)
				for s := range cs {
					text := sentence(r, 120)
					cs[s] = memrec.Chunk{Seq: s, Heading: sentence(r, 2), Text: text, Start: s * 800, End: s*800 + len(text), Embedding: agenttest.HashEmbedding(text, dims)}
				}
				if err := st.PutDocument(ctx, doc, cs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	b.Logf("generated %d memories (%d users) and %d chunks of %d dimensions in %s", nMemories, nUsers, nDocs*perDoc, dims, time.Since(start).Round(time.Millisecond))
	return nil
}

func measure(b *testing.B, st *sqlite.Store, dims int) {
	ctx := context.Background()

	emb, err := embed.New(embed.Config{Model: "hash", Dims: dims}, hashBackend{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	mem, err := memory.New(memory.Config{}, st, emb, nil, memory.Hooks{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	kb, err := knowledge.New(knowledge.Config{}, st, emb, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		q := echogate.ContextQuery{Session: "web:s", UserID: fmt.Sprint("web:u", r.IntN(nUsers)), Channel: "web:s",
			Text: sentence(r, 6) + " " + strconv.Itoa(i), Budget: 1500}
		t0 := time.Now()
		if _, _, err := mem.ContextSection(ctx, q); err != nil {
			b.Fatal(err)
		}
		if _, _, err := kb.ContextSection(ctx, q); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms/turn")
	b.ReportMetric(pct(0.99), "p99-ms/turn")
}
