package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
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

// KnowledgeStore is the method set knowledge.Store needs.
type KnowledgeStore interface {
	EnsureEmbeddingDims(ctx context.Context, dims int) error
	GetDocument(ctx context.Context, idOrSource string) (memrec.Document, error)
	PutDocument(ctx context.Context, doc memrec.Document, chunks []memrec.Chunk) error
	ListDocuments(ctx context.Context, limit int) ([]memrec.Document, error)
	DeleteDocument(ctx context.Context, idOrSource string) error
	SearchChunksVector(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error)
	SearchChunksText(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error)
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

func consLifecycle(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	if _, err := s.ConsolidationState(ctx, sess, "web:u"); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("ConsolidationState(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", Channel: "web:s", DueAt: base}, base.Add(time.Minute)); err != nil {
		t.Fatalf("EnqueueConsolidation = %v", err)
	}
	// Not due yet.
	if _, ok, err := s.ClaimConsolidation(ctx, p+"w1", base.Add(-time.Second), time.Minute); err != nil || ok {
		t.Errorf("ClaimConsolidation before due = %v, %v; want false, nil", ok, err)
	}
	j := claimOwn(t, s, p+"w1", sess, base.Add(time.Second))
	if j.UserID != "web:u" || j.Channel != "web:s" || j.Cursor != 0 || j.Attempts != 1 {
		t.Errorf("claimed job = %+v, want user web:u, channel web:s, cursor 0, attempt 1", j)
	}
	// Enqueued again while running: stays pending after completion.
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", Channel: "web:s", DueAt: base.Add(2 * time.Second)}, base.Add(time.Minute)); err != nil {
		t.Fatalf("EnqueueConsolidation(while leased) = %v", err)
	}
	m := mem(p, "new", "user:web:u", "Likes Helix", base)
	m.Embedding = unit(2, 0)
	if err := s.CompleteConsolidation(ctx, j, memrec.ConsolidationResult{Insert: []memrec.Memory{m}, Cursor: 7}); err != nil {
		t.Fatalf("CompleteConsolidation = %v", err)
	}
	st, err := s.ConsolidationState(ctx, sess, "web:u")
	if err != nil || st.Cursor != 7 || st.Worker != "" || st.DueAt.IsZero() {
		t.Errorf("state after complete (re-enqueued) = %+v, %v; want cursor 7, no worker, still due", st, err)
	}
	if _, err := s.GetMemory(ctx, m.ID); err != nil {
		t.Errorf("GetMemory(inserted by consolidation) = %v", err)
	}
	// Second run: supersede + update + expire; cursor never moves back.
	j2 := claimOwn(t, s, p+"w2", sess, base.Add(3*time.Second))
	m2 := mem(p, "newer", "user:web:u", "Switched to Zed", base.Add(time.Hour))
	old := mem(p, "eph", "user:web:u", "On holiday", base)
	old.ExpiresAt = base.Add(time.Minute)
	if err := s.PutMemory(ctx, old); err != nil {
		t.Fatal(err)
	}
	upd := m
	upd.Text, upd.UpdatedAt = "Likes Helix a lot", base.Add(time.Hour)
	err = s.CompleteConsolidation(ctx, j2, memrec.ConsolidationResult{
		Insert:      []memrec.Memory{m2},
		Update:      []memrec.Memory{upd},
		Supersede:   []memrec.Supersession{{Old: m.ID, New: m2.ID, At: base.Add(time.Hour)}},
		ExpireOwner: p + "user:web:u", ExpireBefore: base.Add(time.Hour),
		Cursor: 5,
	})
	if err != nil {
		t.Fatalf("CompleteConsolidation(2) = %v", err)
	}
	got, _ := s.GetMemory(ctx, m.ID)
	if got.SupersededBy != m2.ID || got.Text != "Likes Helix a lot" || !got.UpdatedAt.Equal(upd.UpdatedAt) {
		t.Errorf("superseded memory = %+v, want superseded by %s with the updated text", got, m2.ID)
	}
	if _, err := s.GetMemory(ctx, old.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("expired memory after consolidation: %v, want deleted", err)
	}
	st, _ = s.ConsolidationState(ctx, sess, "web:u")
	if st.Cursor != 7 || !st.DueAt.IsZero() || st.Attempts != 0 {
		t.Errorf("state after second complete = %+v, want cursor 7 (never back), nothing due, attempts 0", st)
	}
	// Release with retry, then give up.
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", DueAt: base.Add(4 * time.Second)}, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	j3 := claimOwn(t, s, p+"w3", sess, base.Add(5*time.Second))
	if err := s.ReleaseConsolidation(ctx, j3, base.Add(time.Hour), "model down"); err != nil {
		t.Fatalf("ReleaseConsolidation = %v", err)
	}
	st, _ = s.ConsolidationState(ctx, sess, "web:u")
	if !st.DueAt.Equal(base.Add(time.Hour)) || st.LastError != "model down" || st.Worker != "" || st.Attempts != 1 {
		t.Errorf("state after release = %+v, want due in an hour, error recorded, free, 1 attempt", st)
	}
	if err := s.ReleaseConsolidation(ctx, j3, time.Time{}, "again"); !errors.Is(err, memrec.ErrLeaseLost) {
		t.Errorf("ReleaseConsolidation of a released job = %v, want ErrLeaseLost", err)
	}
}

func claimOwn(t *testing.T, s MemoryStore, worker, sess string, now time.Time) memrec.ConsolidationJob {
	t.Helper()
	// Other subtests' jobs may be due on a shared store: claim until ours comes, releasing others.
	for range 100 {
		j, ok, err := s.ClaimConsolidation(ctxT(t), worker, now, time.Minute)
		if err != nil || !ok {
			t.Fatalf("ClaimConsolidation(%s) = %v, %v; want our job", worker, ok, err)
		}
		if j.Session == sess {
			if j.Worker != worker || j.LeaseUntil.IsZero() {
				t.Errorf("claimed job worker %q lease %v, want %q and a lease", j.Worker, j.LeaseUntil, worker)
			}
			return j
		}
		_ = s.ReleaseConsolidation(ctxT(t), j, now.Add(time.Hour*24*365), "")
	}
	t.Fatalf("ClaimConsolidation never returned session %s", sess)
	return memrec.ConsolidationJob{}
}

func consDebounce(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	enq := func(due time.Time) {
		if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, UserID: "web:u", DueAt: due}, due.Add(8*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	enq(base.Add(2 * time.Minute)) // notAfter = base+10m
	enq(base.Add(4 * time.Minute))
	st, _ := s.ConsolidationState(ctx, sess, "web:u")
	if !st.DueAt.Equal(base.Add(4 * time.Minute)) {
		t.Errorf("due after a second enqueue = %v, want %v (debounced)", st.DueAt, base.Add(4*time.Minute))
	}
	enq(base.Add(12 * time.Minute))
	st, _ = s.ConsolidationState(ctx, sess, "web:u")
	if !st.DueAt.Equal(base.Add(10 * time.Minute)) {
		t.Errorf("due after a late enqueue = %v, want %v (capped by the first notAfter)", st.DueAt, base.Add(10*time.Minute))
	}
}

func consLeaseLost(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, DueAt: base}, base); err != nil {
		t.Fatal(err)
	}
	j1 := claimOwn(t, s, p+"w1", sess, base)
	// w1 stalls past its lease; w2 takes over.
	j2 := claimOwn(t, s, p+"w2", sess, base.Add(2*time.Minute))
	if j2.Attempts != 2 {
		t.Errorf("takeover attempts = %d, want 2", j2.Attempts)
	}
	m := mem(p, "dup", "u", "from the stalled worker", base)
	if err := s.CompleteConsolidation(ctx, j1, memrec.ConsolidationResult{Insert: []memrec.Memory{m}, Cursor: 3}); !errors.Is(err, memrec.ErrLeaseLost) {
		t.Errorf("CompleteConsolidation(stale lease) = %v, want ErrLeaseLost", err)
	}
	if _, err := s.GetMemory(ctx, m.ID); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("memory of a stale completion exists (%v): want nothing written", err)
	}
	if err := s.CompleteConsolidation(ctx, j2, memrec.ConsolidationResult{Cursor: 3}); err != nil {
		t.Errorf("CompleteConsolidation(current lease) = %v", err)
	}
}

func consConcurrent(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	sess := p + "s"
	// Far in the future so no other subtest's job competes.
	at := base.Add(1000 * 24 * time.Hour)
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, DueAt: at}, at); err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got int
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, ok, err := s.ClaimConsolidation(ctx, fmt.Sprint(p, "w", i), at, time.Minute)
			if err != nil {
				t.Errorf("ClaimConsolidation = %v", err)
				return
			}
			if ok && j.Session == sess {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != 1 {
		t.Errorf("concurrent claims of one job = %d winners, want 1", got)
	}
}

// RunKnowledge runs the knowledge store conformance suite.
func RunKnowledge(t *testing.T, open func(t *testing.T) KnowledgeStore) {
	t.Helper()
	run := randomHex(t, 6)
	base := time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)
	t.Run("PutSearchReplaceDelete", func(t *testing.T) {
		s := open(t)
		ctx := ctxT(t)
		if err := s.EnsureEmbeddingDims(ctx, TestDims); err != nil {
			t.Fatal(err)
		}
		p := "kt-" + run + "-"
		doc := memrec.Document{ID: p + "d1", Source: "/kb/" + p + "install.md", Title: "Install", MIME: "text/markdown", ContentHash: "h1", Bytes: 100, EmbedModel: "openai:text-embedding-3-small@8", AddedAt: base, UpdatedAt: base}
		chunks := []memrec.Chunk{
			{Seq: 0, Heading: "Install › Linux", Text: "zebraword Run the installer with sudo", Start: 0, End: 40, Embedding: unit(3, 0)},
			{Seq: 1, Heading: "Install › macOS", Text: "quokkaword Use Homebrew to install", Start: 40, End: 80, Embedding: unit(5, 0)},
		}
		if err := s.PutDocument(ctx, doc, chunks); err != nil {
			t.Fatalf("PutDocument = %v", err)
		}
		got, err := s.GetDocument(ctx, doc.Source)
		if err != nil || got.ID != doc.ID || got.Chunks != 2 || got.ContentHash != "h1" || !got.AddedAt.Equal(base) {
			t.Errorf("GetDocument(source) = %+v, %v; want id %s, 2 chunks, hash h1", got, err, doc.ID)
		}
		if got.EmbedModel != doc.EmbedModel {
			t.Errorf("GetDocument EmbedModel = %q, want %q (the embedder of its vectors is recorded)", got.EmbedModel, doc.EmbedModel)
		}
		if got, err := s.GetDocument(ctx, doc.ID); err != nil || got.Source != doc.Source {
			t.Errorf("GetDocument(id) = %+v, %v", got, err)
		}
		vs, err := s.SearchChunksVector(ctx, memrec.PassageQuery{Vector: unit(5, 0), Limit: 1})
		if err != nil || len(vs) != 1 || vs[0].DocID != doc.ID || vs[0].Seq != 1 || vs[0].Source != doc.Source || vs[0].Heading != "Install › macOS" || vs[0].Start != 40 || vs[0].End != 80 || vs[0].EmbedModel != doc.EmbedModel {
			t.Errorf("SearchChunksVector = %+v, %v; want chunk 1 of %s with source, heading, offsets and embed model", vs, err, doc.ID)
		}
		ts, err := s.SearchChunksText(ctx, memrec.PassageQuery{Text: "zebraword?", Limit: 5})
		if err != nil || len(ts) == 0 || ts[0].Seq != 0 || ts[0].DocID != doc.ID {
			t.Errorf("SearchChunksText = %+v, %v; want chunk 0 first", ts, err)
		}
		// Re-adding replaces the chunks.
		doc.ContentHash, doc.UpdatedAt, doc.AddedAt = "h2", base.Add(time.Hour), base.Add(time.Hour)
		if err := s.PutDocument(ctx, doc, []memrec.Chunk{{Seq: 0, Text: "walrusword only chunk now", Embedding: unit(3, 0)}}); err != nil {
			t.Fatalf("PutDocument(replace) = %v", err)
		}
		got, _ = s.GetDocument(ctx, doc.ID)
		if got.Chunks != 1 || got.ContentHash != "h2" || !got.AddedAt.Equal(base) {
			t.Errorf("after replace GetDocument = %+v, want 1 chunk, hash h2, first AddedAt kept", got)
		}
		if ts, _ := s.SearchChunksText(ctx, memrec.PassageQuery{Text: "quokkaword"}); len(ts) != 0 {
			t.Errorf("old chunk still found after replace: %+v", ts)
		}
		list, err := s.ListDocuments(ctx, 0)
		found := false
		for _, d := range list {
			found = found || d.ID == doc.ID
		}
		if err != nil || !found {
			t.Errorf("ListDocuments = %v, %v; want it to hold %s", len(list), err, doc.ID)
		}
		if _, err := s.SearchChunksVector(ctx, memrec.PassageQuery{Vector: []float32{1}}); !errors.Is(err, memrec.ErrDims) {
			t.Errorf("SearchChunksVector(1 dim) = %v, want ErrDims", err)
		}
		if err := s.DeleteDocument(ctx, doc.ID); err != nil {
			t.Fatalf("DeleteDocument = %v", err)
		}
		if ts, _ := s.SearchChunksText(ctx, memrec.PassageQuery{Text: "walrusword"}); len(ts) != 0 {
			t.Errorf("chunk found after DeleteDocument: %+v", ts)
		}
		if err := s.DeleteDocument(ctx, doc.ID); !errors.Is(err, echogate.ErrNotFound) {
			t.Errorf("DeleteDocument(again) = %v, want ErrNotFound", err)
		}
		if _, err := s.GetDocument(ctx, doc.ID); !errors.Is(err, echogate.ErrNotFound) {
			t.Errorf("GetDocument(deleted) = %v, want ErrNotFound", err)
		}
	})
}
