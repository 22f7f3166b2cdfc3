package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// MemoryStore is the method set memory.Store needs (storage packages may not import memory).
// See storage/sqlite/memory.go for the documented contract; RunMemory pins it.
type MemoryStore interface {
	EnsureEmbeddingDims(ctx context.Context, dims int) error
	PutMemory(ctx context.Context, m memrec.Memory) error
	GetMemory(ctx context.Context, id string) (memrec.Memory, error)
	ListMemories(ctx context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error)
	CountMemories(ctx context.Context, f memrec.MemoryFilter) (int, error)
	DeleteMemory(ctx context.Context, id string) error
	SearchMemoriesVector(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error)
	SearchMemoriesText(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error)

	AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error
	CreateTurn(ctx context.Context, t echogate.TurnRecord) error
	MessagesBy(ctx context.Context, key echogate.SessionKey, userID string, after int64, limit int) ([]echogate.StoredMessage, error)

	EnqueueConsolidation(ctx context.Context, j memrec.ConsolidationJob, notAfter time.Time) error
	ClaimConsolidation(ctx context.Context, worker string, now time.Time, lease time.Duration) (memrec.ConsolidationJob, bool, error)
	CompleteConsolidation(ctx context.Context, j memrec.ConsolidationJob, res memrec.ConsolidationResult) error
	ReleaseConsolidation(ctx context.Context, j memrec.ConsolidationJob, retryAt time.Time, errText string) error
	ConsolidationState(ctx context.Context, session, userID string) (memrec.ConsolidationJob, error)
}

// TestDims is the vector size the memory and knowledge suites use.
const TestDims = 8

// unit returns a normalised TestDims vector pointing mostly along axis i.
func unit(i int, noise float32) []float32 {
	v := make([]float32, TestDims)
	v[i%TestDims] = 1
	v[(i+1)%TestDims] = noise
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	for j := range v {
		v[j] /= float32(math.Sqrt(n))
	}
	return v
}

// RunMemory runs the memory store conformance suite. open is as for Run; the store must be
// migrated, and EnsureEmbeddingDims(TestDims) must succeed on it.
func RunMemory(t *testing.T, open func(t *testing.T) MemoryStore) {
	t.Helper()
	run := randomHex(t, 6)
	base := time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		fn   func(t *testing.T, s MemoryStore, p string)
	}{
		{"RoundTrip", func(t *testing.T, s MemoryStore, p string) { memRoundTrip(t, s, p, base) }},
		{"ListFilter", func(t *testing.T, s MemoryStore, p string) { memList(t, s, p, base) }},
		{"VectorSearch", func(t *testing.T, s MemoryStore, p string) { memVector(t, s, p, base) }},
		{"TextSearch", func(t *testing.T, s MemoryStore, p string) { memText(t, s, p, base) }},
		{"Dims", func(t *testing.T, s MemoryStore, p string) { memDims(t, s, p, base) }},
		{"EmbedModel", func(t *testing.T, s MemoryStore, p string) { memEmbedModel(t, s, p, base) }},
		{"MessagesBy", func(t *testing.T, s MemoryStore, p string) { memMessagesBy(t, s, p, base) }},
		{"ConsolidationLifecycle", func(t *testing.T, s MemoryStore, p string) { consLifecycle(t, s, p, base) }},
		{"ConsolidationDebounce", func(t *testing.T, s MemoryStore, p string) { consDebounce(t, s, p, base) }},
		{"ConsolidationLeaseLost", func(t *testing.T, s MemoryStore, p string) { consLeaseLost(t, s, p, base) }},
		{"ConsolidationConcurrentClaims", func(t *testing.T, s MemoryStore, p string) { consConcurrent(t, s, p, base) }},
		{"ConsolidationPerPerson", func(t *testing.T, s MemoryStore, p string) { consPerPerson(t, s, p, base) }},
		{"ConsolidationAfterSessionDeleted", func(t *testing.T, s MemoryStore, p string) { consAfterSessionDeleted(t, s, p, base) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			if err := s.EnsureEmbeddingDims(ctxT(t), TestDims); err != nil {
				t.Fatalf("EnsureEmbeddingDims(%d) = %v, want nil", TestDims, err)
			}
			tt.fn(t, s, "mt-"+run+"-"+tt.name+"-")
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mem(p, id, owner, text string, at time.Time) memrec.Memory {
	return memrec.Memory{ID: p + id, Owner: p + owner, Text: text, Kind: memrec.KindFact, Importance: 0.5, CreatedAt: at, UpdatedAt: at}
}

func ids(ms []memrec.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func scoredIDs(ms []memrec.ScoredMemory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func memRoundTrip(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	m := mem(p, "a", "user:u1", "Favourite editor is Helix", base)
	m.Kind, m.Importance, m.Pinned, m.Session, m.SourceTurn = memrec.KindPreference, 0.75, true, "web:s1", "t_1"
	m.Embedding = unit(1, 0.1)
	m.ExpiresAt = base.Add(48 * time.Hour)
	if err := s.PutMemory(ctx, m); err != nil {
		t.Fatalf("PutMemory = %v, want nil", err)
	}
	got, err := s.GetMemory(ctx, m.ID)
	if err != nil {
		t.Fatalf("GetMemory = %v", err)
	}
	if got.Text != m.Text || got.Kind != m.Kind || got.Importance != m.Importance || !got.Pinned || got.Session != m.Session ||
		got.SourceTurn != m.SourceTurn || !got.CreatedAt.Equal(base) || !got.ExpiresAt.Equal(m.ExpiresAt) || got.SupersededBy != "" ||
		len(got.Embedding) != TestDims || math.Abs(float64(got.Embedding[1]-m.Embedding[1])) > 1e-6 {
		t.Errorf("GetMemory = %+v, want %+v", got, m)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("GetMemory CreatedAt location = %v, want UTC", got.CreatedAt.Location())
	}
	// Replace: CreatedAt kept, fields changed.
	m2 := m
	m2.Text, m2.CreatedAt, m2.UpdatedAt, m2.ExpiresAt = "Favourite editor is Zed", base.Add(time.Hour), base.Add(time.Hour), time.Time{}
	if err := s.PutMemory(ctx, m2); err != nil {
		t.Fatalf("PutMemory(replace) = %v", err)
	}
	got, _ = s.GetMemory(ctx, m.ID)
	if got.Text != m2.Text || !got.CreatedAt.Equal(base) || !got.UpdatedAt.Equal(m2.UpdatedAt) || !got.ExpiresAt.IsZero() {
		t.Errorf("after replace GetMemory = text %q created %v updated %v expires %v, want %q, %v, %v, zero", got.Text, got.CreatedAt, got.UpdatedAt, got.ExpiresAt, m2.Text, base, m2.UpdatedAt)
	}
	if err := s.DeleteMemory(ctx, m.ID); err != nil {
		t.Fatalf("DeleteMemory = %v", err)
	}
	if _, err := s.GetMemory(ctx, m.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetMemory(deleted) = %v, want ErrNotFound", err)
	}
	if err := s.DeleteMemory(ctx, m.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("DeleteMemory(deleted) = %v, want ErrNotFound", err)
	}
	for name, bad := range map[string]memrec.Memory{
		"no id":    {Owner: "x", Text: "y"},
		"no owner": {ID: p + "x", Text: "y"},
		"no text":  {ID: p + "x", Owner: "x", Text: "  "},
	} {
		if err := s.PutMemory(ctx, bad); err == nil {
			t.Errorf("PutMemory(%s) = nil, want an error", name)
		}
	}
}

func memList(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	a := mem(p, "a", "u1", "alpha", base)
	b := mem(p, "b", "u1", "bravo", base.Add(time.Minute))
	b.Pinned = true
	c := mem(p, "c", "u1", "charlie expired", base.Add(2*time.Minute))
	c.ExpiresAt = base.Add(time.Hour)
	d := mem(p, "d", "u1", "delta superseded", base.Add(3*time.Minute))
	d.SupersededBy, d.SupersededAt = p+"a", base.Add(4*time.Minute)
	e := mem(p, "e", "u2", "echo other owner", base.Add(4*time.Minute))
	for _, m := range []memrec.Memory{a, b, c, d, e} {
		if err := s.PutMemory(ctx, m); err != nil {
			t.Fatalf("PutMemory(%s) = %v", m.ID, err)
		}
	}
	now := base.Add(2 * time.Hour)
	for name, tt := range map[string]struct {
		f    memrec.MemoryFilter
		want []string
	}{
		"all of u1":        {memrec.MemoryFilter{Owners: []string{p + "u1"}}, []string{p + "d", p + "c", p + "b", p + "a"}},
		"current of u1":    {memrec.MemoryFilter{Owners: []string{p + "u1"}, Current: true, Now: now}, []string{p + "b", p + "a"}},
		"current, earlier": {memrec.MemoryFilter{Owners: []string{p + "u1"}, Current: true, Now: base.Add(30 * time.Minute)}, []string{p + "c", p + "b", p + "a"}},
		"pinned":           {memrec.MemoryFilter{Owners: []string{p + "u1"}, Pinned: true}, []string{p + "b"}},
		"two owners":       {memrec.MemoryFilter{Owners: []string{p + "u1", p + "u2"}, Current: true, Now: now, Limit: 2}, []string{p + "e", p + "b"}},
	} {
		got, err := s.ListMemories(ctx, tt.f)
		if err != nil {
			t.Fatalf("%s: ListMemories = %v", name, err)
		}
		if g := strings.Join(ids(got), ","); g != strings.Join(tt.want, ",") {
			t.Errorf("%s: ListMemories = %s, want %s", name, g, strings.Join(tt.want, ","))
		}
	}
}

func memVector(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	var all []memrec.Memory
	for i := range 4 {
		m := mem(p, fmt.Sprint("v", i), "u1", fmt.Sprint("memory number ", i), base)
		m.Embedding = unit(i, 0.2)
		all = append(all, m)
	}
	other := mem(p, "o", "u2", "other owner", base)
	other.Embedding = unit(0, 0)
	expired := mem(p, "x", "u1", "expired", base)
	expired.Embedding, expired.ExpiresAt = unit(0, 0), base.Add(time.Minute)
	noVec := mem(p, "n", "u1", "no vector", base)
	for _, m := range append(all, other, expired, noVec) {
		if err := s.PutMemory(ctx, m); err != nil {
			t.Fatalf("PutMemory(%s) = %v", m.ID, err)
		}
	}
	got, err := s.SearchMemoriesVector(ctx, memrec.MemoryQuery{Owners: []string{p + "u1"}, Vector: unit(0, 0.5), Now: base.Add(time.Hour), Limit: 2})
	if err != nil {
		t.Fatalf("SearchMemoriesVector = %v", err)
	}
	if g := strings.Join(scoredIDs(got), ","); g != p+"v0,"+p+"v1" {
		t.Errorf("SearchMemoriesVector = %s, want %sv0,%sv1 (nearest first, other owners, expired and vectorless left out)", g, p, p)
	}
	if len(got) > 0 && (got[0].Rank != 1 || got[0].Score < 0.85 || got[0].Score > 1.0001) {
		t.Errorf("SearchMemoriesVector[0] rank %d score %v, want 1 and cosine similarity ~0.98", got[0].Rank, got[0].Score)
	}
	if _, err := s.SearchMemoriesVector(ctx, memrec.MemoryQuery{Owners: []string{p + "u1"}, Vector: []float32{1, 0}}); err == nil || !errors.Is(err, memrec.ErrDims) {
		t.Errorf("SearchMemoriesVector(2 dims) = %v, want ErrDims", err)
	}
}

func memText(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	for _, m := range []memrec.Memory{
		mem(p, "h", "u1", "Favourite editor is Helix", base),
		mem(p, "c", "u1", "Drinks coffee without sugar", base),
		mem(p, "o", "u2", "Favourite editor is Emacs", base),
	} {
		if err := s.PutMemory(ctx, m); err != nil {
			t.Fatalf("PutMemory = %v", err)
		}
	}
	for q, want := range map[string]string{
		"which editor do I like?":     p + "h",
		"EDITOR":                      p + "h",
		`editor" OR (x NEAR y) * ^ :`: p + "h",
		"coffee":                      p + "c",
		"nothing matches here zzzz":   "",
		"   ":                         "",
	} {
		got, err := s.SearchMemoriesText(ctx, memrec.MemoryQuery{Owners: []string{p + "u1"}, Text: q, Now: base})
		if err != nil {
			t.Fatalf("SearchMemoriesText(%q) = %v", q, err)
		}
		first := ""
		if len(got) > 0 {
			first = got[0].ID
		}
		if first != want {
			t.Errorf("SearchMemoriesText(%q) first = %q, want %q (all: %v)", q, first, want, scoredIDs(got))
		}
	}
}

func memDims(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	err := s.EnsureEmbeddingDims(ctx, TestDims+1)
	if !errors.Is(err, memrec.ErrDims) || !strings.Contains(err.Error(), "embeddings.dimensions") {
		t.Errorf("EnsureEmbeddingDims(other size) = %v, want ErrDims naming embeddings.dimensions", err)
	}
	m := mem(p, "a", "u1", "x", base)
	m.Embedding = []float32{1, 2, 3}
	if err := s.PutMemory(ctx, m); !errors.Is(err, memrec.ErrDims) {
		t.Errorf("PutMemory(3-dim vector) = %v, want ErrDims", err)
	}
	if _, err := s.GetMemory(ctx, m.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetMemory after a refused put = %v, want ErrNotFound", err)
	}
}
