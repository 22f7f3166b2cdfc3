package embed

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// fakeBackend returns vectors [len(text), i] and fails while fail > 0.
type fakeBackend struct {
	mu      sync.Mutex
	calls   [][]string
	fail    int
	dims    int
	wrongSz bool
}

func (f *fakeBackend) Embed(ctx context.Context, model string, dims int, texts []string) ([][]float32, echogate.Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, append([]string(nil), texts...))
	if f.fail > 0 {
		f.fail--
		return nil, echogate.Usage{Kind: echogate.UsageEmbedding, Model: model, Failed: true}, errors.New("503 from the endpoint")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, dims)
		v[0] = float32(len(t))
		if f.wrongSz {
			v = v[:1]
		}
		out[i] = v
	}
	return out, echogate.Usage{Kind: echogate.UsageEmbedding, Model: model, InputTokens: int64(len(texts))}, nil
}

func (f *fakeBackend) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func TestNewValidates(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg  Config
		b    Backend
		want string
	}{
		"no backend": {Config{Model: "m"}, nil, "no backend"},
		"no model":   {Config{}, &fakeBackend{}, "embeddings.model"},
		"bad dims":   {Config{Model: "m", Dims: -1}, &fakeBackend{}, "embeddings.dimensions"},
		"ok":         {Config{Model: "m", Dims: 4}, &fakeBackend{}, ""},
	} {
		_, err := New(tt.cfg, tt.b, nil)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: New = %v, want error containing %q", name, err, tt.want)
		}
	}
}

func TestBatchingAndCache(t *testing.T) {
	b := &fakeBackend{}
	e, err := New(Config{Model: "m", Dims: 4, BatchSize: 2}, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vs, u, err := e.Embed(ctx, []string{"a", "bb", "a", "ccc", "dddd"})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.n(); got != 2 {
		t.Errorf("backend calls = %d, want 2 (4 distinct texts in batches of 2)", got)
	}
	if u.InputTokens != 4 || u.Kind != echogate.UsageEmbedding {
		t.Errorf("usage = %+v, want 4 input tokens of kind embedding", u)
	}
	for i, want := range []float32{1, 2, 1, 3, 4} {
		if vs[i][0] != want {
			t.Errorf("Embed[%d][0] = %v, want %v", i, vs[i][0], want)
		}
	}
	// Everything cached: no call, no usage.
	_, u, err = e.Embed(ctx, []string{"dddd", "a"})
	if err != nil || b.n() != 2 || u.InputTokens != 0 {
		t.Errorf("cached Embed = calls %d, usage %+v, err %v; want no call and no usage", b.n(), u, err)
	}
	if _, _, err := e.Embed(ctx, []string{"x", ""}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Embed(empty text) = %v, want ErrInvalid", err)
	}
}

func TestWrongDimensionsFail(t *testing.T) {
	e, _ := New(Config{Model: "m", Dims: 4}, &fakeBackend{wrongSz: true}, nil)
	if _, _, err := e.Embed(context.Background(), []string{"a"}); err == nil || !strings.Contains(err.Error(), "embeddings.dimensions") {
		t.Errorf("Embed with a wrong-size answer = %v, want an error naming embeddings.dimensions", err)
	}
}

// TestBreaker: three consecutive failures open the breaker; while open no call is made; after
// the cool-down, on Config.Now, one probe closes it.
func TestBreaker(t *testing.T) {
	b := &fakeBackend{fail: 3}
	var mu sync.Mutex
	var states []string
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e, _ := New(Config{Model: "m", Dims: 4, CoolDown: time.Minute, Now: clock, OnState: func(from, to string) {
		mu.Lock()
		states = append(states, to)
		mu.Unlock()
	}}, b, nil)
	ctx := context.Background()
	for i := range 3 {
		if _, _, err := e.Embed(ctx, []string{"t" + string(rune('a'+i))}); err == nil || errors.Is(err, ErrUnavailable) {
			t.Fatalf("failure %d: Embed = %v, want the backend's error", i, err)
		}
	}
	if e.State() != "open" {
		t.Fatalf("State after 3 failures = %s, want open", e.State())
	}
	if _, _, err := e.Embed(ctx, []string{"z"}); !errors.Is(err, ErrUnavailable) || b.n() != 3 {
		t.Errorf("Embed while open = %v after %d calls, want ErrUnavailable without a call", err, b.n())
	}
	mu.Lock()
	now = now.Add(time.Minute - time.Second)
	mu.Unlock()
	if _, _, err := e.Embed(ctx, []string{"y"}); !errors.Is(err, ErrUnavailable) || b.n() != 3 {
		t.Errorf("Embed a second before the cool-down ends = %v after %d calls, want ErrUnavailable without a call", err, b.n())
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if _, _, err := e.Embed(ctx, []string{"probe"}); err != nil {
		t.Fatalf("probe Embed = %v, want success", err)
	}
	if e.State() != "closed" {
		t.Errorf("State after a good probe = %s, want closed", e.State())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(states, ",") != "open,half-open,closed" {
		t.Errorf("state changes = %v, want open, half-open, closed", states)
	}
}

func TestCancelledCallerDoesNotTrip(t *testing.T) {
	b := &fakeBackend{}
	e, _ := New(Config{Model: "m", Dims: 4, Failures: 1}, ctxBackend{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 3 {
		_, _, _ = e.Embed(ctx, []string{"a"})
	}
	if e.State() != "closed" {
		t.Errorf("State after cancelled calls = %s, want closed", e.State())
	}
	_ = b
}

type ctxBackend struct{}

func (ctxBackend) Embed(ctx context.Context, model string, dims int, texts []string) ([][]float32, echogate.Usage, error) {
	return nil, echogate.Usage{}, ctx.Err()
}

// TestCacheEvictsLeastRecentlyUsed: the cache holds Config.CacheSize vectors; a hit refreshes a
// text, and the least recently used one is embedded again. CacheSize -1 caches nothing.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	b := &fakeBackend{}
	e, _ := New(Config{Model: "m", Dims: 4, CacheSize: 2}, b, nil)
	for i, step := range []struct {
		text  string
		calls int // backend calls after this step
	}{
		{"a", 1}, {"b", 2}, {"a", 2}, {"c", 3}, // a was refreshed: b is evicted
		{"a", 3}, {"b", 4},
	} {
		if _, _, err := e.Embed(ctx, []string{step.text}); err != nil {
			t.Fatal(err)
		}
		if got := b.n(); got != step.calls {
			t.Fatalf("step %d (%q): backend calls = %d, want %d", i, step.text, got, step.calls)
		}
	}
	none := &fakeBackend{}
	e, _ = New(Config{Model: "m", Dims: 4, CacheSize: -1}, none, nil)
	for range 2 {
		e.Embed(ctx, []string{"a"})
	}
	if got := none.n(); got != 2 {
		t.Errorf("CacheSize -1: backend calls for the same text twice = %d, want 2", got)
	}
}
