// Package embed is the embedding decorator shared by memory and knowledge: it batches texts,
// caches vectors by content hash (so unchanged text is never embedded twice in a process) and
// wraps the embedding endpoint in a circuit breaker (internal/breaker), so that a failing endpoint
// costs one fast error per call instead of a timeout per turn.
//
// While the breaker is open, Embed fails at once with an error wrapping ErrUnavailable; callers
// fall back to full-text search. After Config.CoolDown one probe call is let through; when it
// succeeds the breaker closes again.
package embed

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/breaker"
)

// ErrUnavailable is wrapped by Embed while the breaker is open (or half-open with its probe in
// flight): the endpoint failed Config.Failures times in a row and is given a rest.
var ErrUnavailable = errors.New("embedding endpoint unavailable (circuit breaker open)")

// ErrInvalid is wrapped for bad arguments: an empty text, a bad Config.
var ErrInvalid = errors.New("invalid argument")

// Backend computes embeddings: agent/provider/openai.Provider and the demo model satisfy it.
// It blocks until done or ctx ends; usage covers the work done, also on error.
type Backend interface {
	Embed(ctx context.Context, model string, dims int, texts []string) ([][]float32, echogate.Usage, error)
}

// Config tunes an Embedder. The zero value of each field means the default documented on it;
// Model is required.
type Config struct {
	Model     string        // embedding model (embeddings.model); required
	Dims      int           // vector size (embeddings.dimensions); default 1536
	BatchSize int           // texts per backend call; default 64
	CacheSize int           // cached vectors (LRU); default 8192; negative disables the cache
	Failures  int           // consecutive failures that open the breaker; default 3
	CoolDown  time.Duration // how long the breaker stays open before a probe; default 30s
	// OnState is called on every breaker state change ("closed", "open", "half-open"), e.g. to
	// update a metric. It must not block.
	OnState func(from, to string)
	// Now is the breaker's clock (its cool-down runs on it). Default time.Now.
	Now func() time.Time
}

// Embedder is the decorator. It is safe for concurrent use.
type Embedder struct {
	cfg Config
	b   Backend
	log *slog.Logger
	cb  *breaker.Breaker

	cache *lru.Cache[[32]byte, []float32] // nil when Config.CacheSize < 0
}

type batchOut struct {
	vecs  [][]float32
	usage echogate.Usage
}

// New validates cfg and returns an Embedder over b. It does no I/O. log may be nil.
func New(cfg Config, b Backend, log *slog.Logger) (*Embedder, error) {
	if b == nil {
		return nil, fmt.Errorf("embed: %w: no backend", ErrInvalid)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("embed: %w: no model: set embeddings.model (ECHOGATE_EMBEDDING_MODEL)", ErrInvalid)
	}
	switch {
	case cfg.Dims < 0 || cfg.Dims > 16000:
		return nil, fmt.Errorf("embed: %w: dimensions %d out of range: set embeddings.dimensions between 1 and 16000", ErrInvalid, cfg.Dims)
	case cfg.Dims == 0:
		cfg.Dims = 1536
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = 8192
	}
	if cfg.Failures <= 0 {
		cfg.Failures = 3
	}
	if cfg.CoolDown <= 0 {
		cfg.CoolDown = 30 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Embedder{cfg: cfg, b: b, log: log}
	if cfg.CacheSize > 0 {
		c, err := lru.New[[32]byte, []float32](cfg.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("embed: %w: cache size %d: %v", ErrInvalid, cfg.CacheSize, err)
		}
		e.cache = c
	}
	e.cb = breaker.New(breaker.Settings{
		Name:     "embeddings",
		Failures: cfg.Failures,
		CoolDown: cfg.CoolDown,
		Now:      cfg.Now,
		// A caller that gave up is not the endpoint's fault.
		IsSuccessful: func(err error) bool { return err == nil || errors.Is(err, context.Canceled) },
		OnState: func(_ string, from, to breaker.State) {
			if to == breaker.StateOpen {
				e.log.Warn("embeddings: circuit breaker opened; retrieval uses full-text search only until the endpoint recovers",
					"model", cfg.Model, "cool_down", cfg.CoolDown)
			} else {
				e.log.Info("embeddings: circuit breaker changed state", "model", cfg.Model, "from", from.String(), "to", to.String())
			}
			if cfg.OnState != nil {
				cfg.OnState(from.String(), to.String())
			}
		},
	})
	return e, nil
}

// Model is the embedding model.
func (e *Embedder) Model() string { return e.cfg.Model }

// Dims is the vector size.
func (e *Embedder) Dims() int { return e.cfg.Dims }

// State is the breaker state: "closed", "half-open" or "open".
func (e *Embedder) State() string { return e.cb.State().String() }

// Embed returns one vector per text, in order. Cached texts are answered from the cache; the
// rest are sent in batches of Config.BatchSize through the breaker. Usage sums the backend calls
// made (zero when everything was cached), also on error.
//
// It blocks until every batch is done or ctx ends. Errors: ErrInvalid for an empty text,
// ErrUnavailable while the breaker is open, else the backend's error (wrapped).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, echogate.Usage, error) {
	usage := echogate.Usage{Kind: echogate.UsageEmbedding, Model: e.cfg.Model}
	out := make([][]float32, len(texts))
	keys := make([][32]byte, len(texts))
	var missing []int // indexes of texts to compute (first occurrence of each key)
	first := map[[32]byte]int{}
	for i, t := range texts {
		if t == "" {
			return nil, usage, fmt.Errorf("embed: text %d is empty: %w", i, ErrInvalid)
		}
		keys[i] = e.key(t)
		if v, ok := e.get(keys[i]); ok {
			out[i] = v
			continue
		}
		if _, seen := first[keys[i]]; seen {
			continue
		}
		first[keys[i]] = i
		missing = append(missing, i)
	}
	for start := 0; start < len(missing); start += e.cfg.BatchSize {
		idx := missing[start:min(start+e.cfg.BatchSize, len(missing))]
		batch := make([]string, len(idx))
		for j, i := range idx {
			batch[j] = texts[i]
		}
		res, err := breaker.Do(e.cb, func() (batchOut, error) {
			v, u, err := e.b.Embed(ctx, e.cfg.Model, e.cfg.Dims, batch)
			if err == nil && len(v) != len(batch) {
				err = fmt.Errorf("sent %d texts, got %d vectors", len(batch), len(v))
			}
			if err == nil {
				for _, x := range v {
					if len(x) != e.cfg.Dims {
						err = fmt.Errorf("got a %d-dimensional vector, want %d: set embeddings.dimensions to what the model returns", len(x), e.cfg.Dims)
						break
					}
				}
			}
			return batchOut{vecs: v, usage: u}, err
		})
		usage.InputTokens += res.usage.InputTokens
		usage.CostUSD += res.usage.CostUSD
		if err != nil {
			usage.Failed = true
			if errors.Is(err, breaker.ErrOpen) || errors.Is(err, breaker.ErrTooManyRequests) {
				return nil, usage, fmt.Errorf("embed with %s: %w", e.cfg.Model, ErrUnavailable)
			}
			return nil, usage, fmt.Errorf("embed with %s: %w", e.cfg.Model, err)
		}
		for j, i := range idx {
			out[i] = res.vecs[j]
			e.put(keys[i], res.vecs[j])
		}
	}
	for i := range out {
		if out[i] == nil { // a repeated text in this call
			out[i] = out[first[keys[i]]]
		}
	}
	return out, usage, nil
}

func (e *Embedder) key(text string) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", e.cfg.Model, e.cfg.Dims)
	h.Write([]byte(text))
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

func (e *Embedder) get(k [32]byte) ([]float32, bool) {
	if e.cache == nil {
		return nil, false
	}
	return e.cache.Get(k)
}

// put caches v under k; a key already cached keeps its vector (the same text's) and is refreshed.
func (e *Embedder) put(k [32]byte, v []float32) {
	if e.cache == nil {
		return
	}
	if _, ok := e.cache.Get(k); !ok {
		e.cache.Add(k, v)
	}
}
