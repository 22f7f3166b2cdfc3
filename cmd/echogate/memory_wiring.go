package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/agent/provider/demo"
	"github.com/echogate/echogate/agent/provider/openai"
	"github.com/echogate/echogate/internal/embed"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/knowledge"
	"github.com/echogate/echogate/memory"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/sqlite"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
)

// memStore is what memory and knowledge need of the store, beyond pipeline.Store.
type memStore interface {
	memory.Store
	knowledge.Store
	EnsureEmbeddingDims(ctx context.Context, dims int) error
}

var (
	_ memStore = (*sqlite.Store)(nil)
	_ memStore = (*postgres.Store)(nil)
)

// Defaults of the memory and knowledge sections not owned by the packages.
const (
	defaultMemoryBudget    = 600  // tokens of the memory snapshot
	defaultKnowledgeBudget = 1200 // tokens of knowledge passages per turn
	contextTimeout         = 10 * time.Second
)

// memkb is the wiring of long-term memory and the knowledge base.
type memkb struct {
	cfg *Config
	emb *embed.Embedder
	mem *memory.Service    // nil when memory.enabled is false
	kb  *knowledge.Service // nil when knowledge.enabled is false
}

func enabled(b *bool) bool { return b == nil || *b }

// optIn reports a feature switch that defaults to off: memory and knowledge send conversation
// text to the embedding endpoint and keep it, so an operator turns them on knowingly.
func optIn(b *bool) bool { return b != nil && *b }

// validateMemKB checks the memory and knowledge sections, naming the key at fault.
func validateMemKB(cfg *Config) error {
	bad := func(key, msg string, args ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(msg, args...)}
	}
	m, k := cfg.Memory, cfg.Knowledge
	switch {
	case m.BudgetTokens < 0 || m.BudgetTokens > 100000:
		return bad("memory.budget_tokens", "%d is out of range (0 for the default %d, up to 100000)", m.BudgetTokens, defaultMemoryBudget)
	case m.MinSimilarity < 0 || m.MinSimilarity >= 1:
		return bad("memory.min_similarity", "%v must be between 0 and 1 (cosine similarity)", m.MinSimilarity)
	case m.DuplicateSimilarity < 0 || m.DuplicateSimilarity > 1:
		return bad("memory.duplicate_similarity", "%v must be between 0 and 1 (cosine similarity)", m.DuplicateSimilarity)
	case m.PinnedLimit < 0 || m.RelevantLimit < 0:
		return bad("memory.pinned_limit", "limits must not be negative")
	case m.Consolidation.MaxDelay > 0 && m.Consolidation.Debounce > m.Consolidation.MaxDelay:
		return bad("memory.consolidation.debounce", "%s is longer than memory.consolidation.max_delay %s", time.Duration(m.Consolidation.Debounce), time.Duration(m.Consolidation.MaxDelay))
	case m.Consolidation.MaxAttempts < 0:
		return bad("memory.consolidation.max_attempts", "must not be negative")
	case k.BudgetTokens < 0 || k.BudgetTokens > 100000:
		return bad("knowledge.budget_tokens", "%d is out of range (0 for the default %d, up to 100000)", k.BudgetTokens, defaultKnowledgeBudget)
	case k.TopK < 0 || k.TopK > 50:
		return bad("knowledge.top_k", "%d is out of range (1 to 50)", k.TopK)
	case k.ChunkSize != 0 && (k.ChunkSize < 200 || k.ChunkSize > 20000):
		return bad("knowledge.chunk_size", "%d bytes is out of range (200 to 20000)", k.ChunkSize)
	case k.ChunkOverlap < 0 || (k.ChunkOverlap > 0 && k.ChunkOverlap*2 >= max(k.ChunkSize, 1200)):
		return bad("knowledge.chunk_overlap", "%d must be less than half of knowledge.chunk_size", k.ChunkOverlap)
	case k.MinSimilarity < 0 || k.MinSimilarity >= 1:
		return bad("knowledge.min_similarity", "%v must be between 0 and 1 (cosine similarity)", k.MinSimilarity)
	}
	return nil
}

// newEmbedBackend is the embedding endpoint: the first provider, or the demo model's offline
// embeddings.
func newEmbedBackend(cfg *Config, log *slog.Logger) (embed.Backend, error) {
	if cfg.demoMode() {
		return demo.New(demo.Config{}, log.With("model", "demo"))
	}
	p := cfg.Models.Providers[0]
	b, err := openai.New(openai.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, MaxRetries: p.MaxRetries, Timeout: time.Duration(p.Timeout)}, log.With("provider", p.Name))
	if err != nil {
		return nil, fmt.Errorf("models.providers[0] (%s) for embeddings: %w", p.Name, err)
	}
	return b, nil
}

// memkbDeps are what newMemKB needs from the core (explicit, so tests can build one alone).
type memkbDeps struct {
	store    store
	backend  embed.Backend // nil: newEmbedBackend(cfg)
	model    agent.Model   // the chat model for consolidation; nil disables it
	record   func(echogate.UsageRecord)
	pricer   pipeline.Pricer
	budget   func(ctx context.Context, s cost.Scope, req agent.Request) error // nil: no budgets
	onState  func(from, to string)                                            // breaker metric
	keyword  func()                                                           // keyword-only metric
	now      func() time.Time
	after    func(time.Duration) <-chan time.Time
	coolDown time.Duration // embedding breaker; 0: the default (tests shorten it)
	log      *slog.Logger
}

// newMemKB builds memory and knowledge on the core's store. It checks the store's embedding
// size against embeddings.dimensions (one round trip) and fails naming that key on a mismatch.
func newMemKB(ctx context.Context, cfg *Config, d memkbDeps) (*memkb, error) {
	if err := validateMemKB(cfg); err != nil {
		return nil, err
	}
	k := &memkb{cfg: cfg}
	if !optIn(cfg.Memory.Enabled) && !optIn(cfg.Knowledge.Enabled) {
		return k, nil
	}
	ms, ok := d.store.(memStore)
	if !ok {
		return nil, fmt.Errorf("memory and knowledge: the %T store does not support them: set memory.enabled and knowledge.enabled to false", d.store)
	}
	if err := ms.EnsureEmbeddingDims(ctx, cfg.Embeddings.Dimensions); err != nil {
		return nil, fmt.Errorf("embeddings.dimensions: %w", err)
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	backend := d.backend
	if backend == nil {
		var err error
		if backend, err = newEmbedBackend(cfg, d.log); err != nil {
			return nil, err
		}
	}
	var err error
	k.emb, err = embed.New(embed.Config{Model: cfg.Embeddings.Model, Dims: cfg.Embeddings.Dimensions, OnState: d.onState, CoolDown: d.coolDown}, backend, d.log.With("component", "embeddings"))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	report := d.usageReporter()
	if optIn(cfg.Knowledge.Enabled) {
		if err := k.openKnowledge(ctx, ms, d, report); err != nil {
			return nil, err
		}
	}
	if optIn(cfg.Memory.Enabled) {
		if err := k.openMemory(ctx, ms, d, report); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// contextProviders are the pipeline's memory snapshot and knowledge hits, each with its own
// budget and a timeout (a slow store or endpoint costs the turn its section, not the answer).
func (k *memkb) contextProviders() []pipeline.ContextProvider {
	var out []pipeline.ContextProvider
	if k == nil {
		return nil
	}
	if k.mem != nil {
		// Versioned: the pipeline freezes the snapshot per session until memory changes.
		out = append(out, versioned{budgeted{p: k.mem, budget: orInt(k.cfg.Memory.BudgetTokens, defaultMemoryBudget), kind: "memory"}, k.mem})
	}
	if k.kb != nil {
		out = append(out, budgeted{p: k.kb, budget: orInt(k.cfg.Knowledge.BudgetTokens, defaultKnowledgeBudget), kind: "knowledge"})
	}
	return out
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

type budgeted struct {
	p      pipeline.ContextProvider
	budget int
	kind   string // memory | knowledge: an agent profile may switch it off (pipeline.ContextKind)
}

func (b budgeted) ContextKind() string { return b.kind }

func (b budgeted) ContextSection(ctx context.Context, q echogate.ContextQuery) (string, string, error) {
	q.Budget = b.budget
	ctx, cancel := context.WithTimeout(ctx, contextTimeout)
	defer cancel()
	return b.p.ContextSection(ctx, q)
}

// versioned is a budgeted memory snapshot with its version (pipeline.VersionedContext).
type versioned struct {
	budgeted
	v interface {
		ContextVersion(q echogate.ContextQuery) uint64
	}
}

func (v versioned) ContextVersion(q echogate.ContextQuery) uint64 { return v.v.ContextVersion(q) }

// afterTurn enqueues the consolidation of an answered turn's session.
func (k *memkb) afterTurn(log *slog.Logger) []func(context.Context, pipeline.TurnSummary) {
	if k == nil || k.mem == nil || !enabled(k.cfg.Memory.Consolidation.Enabled) {
		return nil
	}
	return []func(context.Context, pipeline.TurnSummary){func(ctx context.Context, t pipeline.TurnSummary) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := k.mem.Enqueue(ctx, t.Session, t.UserID, t.Channel); err != nil {
			log.Warn("memory: enqueue consolidation", "session", t.Session, "turn", t.Turn, "err", err)
		}
	}}
}

// registerTools adds remember/recall/forget and knowledge_search to reg (each behind the same
// circuit breaker as the other built-ins), unless disabled under tools.<name>.enabled.
func (k *memkb) registerTools(reg *tools.Registry, wrap func(tools.Tool) tools.Tool) error {
	if k == nil {
		return nil
	}
	on := func(name string) bool {
		if c, ok := k.cfg.Tools[name]; ok && c.Enabled != nil {
			return *c.Enabled
		}
		return true
	}
	if k.mem != nil {
		ts, err := builtin.NewMemoryTools(builtin.MemoryToolsConfig{}, memoryBackend{k.mem})
		if err != nil {
			return err
		}
		for _, t := range ts {
			if on(t.Spec().Name) {
				if err := reg.Add(wrap(t)); err != nil {
					return err
				}
			}
		}
	}
	if k.kb != nil && on(builtin.KnowledgeSearchName) {
		t, err := builtin.NewKnowledgeSearch(builtin.KnowledgeSearchConfig{}, k.kb)
		if err != nil {
			return err
		}
		if err := reg.Add(wrap(t)); err != nil {
			return err
		}
	}
	return nil
}

// worker is the consolidation worker (nil when there is none).
func (k *memkb) worker() func(context.Context) error {
	if k == nil || k.mem == nil || !enabled(k.cfg.Memory.Consolidation.Enabled) {
		return nil
	}
	return k.mem.Run
}

// memoryBackend adapts memory.Service to the memory tools.
type memoryBackend struct{ s *memory.Service }

func (b memoryBackend) Remember(ctx context.Context, c builtin.Caller, text, kind string, pinned bool, ttl time.Duration) (memrec.Memory, error) {
	return b.s.Remember(ctx, memory.Note{Owner: memrec.UserOwner(c.UserID), Text: text, Kind: kind, Pinned: pinned, TTL: ttl,
		Session: c.Session, Turn: c.Turn, UserID: c.UserID, Channel: c.Channel})
}

func (b memoryBackend) Recall(ctx context.Context, c builtin.Caller, query string, limit int) ([]memrec.ScoredMemory, error) {
	return b.s.Recall(ctx, b.s.Owners(c.UserID, c.Channel), query, limit, c.Session, c.UserID, c.Channel)
}

func (b memoryBackend) Forget(ctx context.Context, c builtin.Caller, id string) (memrec.Memory, error) {
	return b.s.Forget(ctx, []string{memrec.UserOwner(c.UserID)}, id)
}

// modelExtractor adapts the chat model to memory.Extractor: one non-streamed completion at
// temperature 0, no tools.
type modelExtractor struct {
	m     agent.Model
	model string
}

func (e modelExtractor) Extract(ctx context.Context, system, user string) (string, echogate.Usage, error) {
	var zero float32
	resp, err := e.m.Generate(ctx, agent.Request{Model: e.model, MaxTokens: 1000, Temperature: &zero,
		Messages: []echogate.Message{{Role: echogate.RoleSystem, Content: system}, {Role: echogate.RoleUser, Content: user}}},
		func(agent.Delta) error { return nil })
	if err != nil {
		return "", resp.Usage, fmt.Errorf("consolidation model %s: %w", e.model, err)
	}
	return resp.Message.Content, resp.Usage, nil
}

// newMemKB wires memory and knowledge into the core: tools registered, the consolidation worker
// added to the background workers.
func (c *core) newMemKB(ctx context.Context) (*memkb, error) {
	d := memkbDeps{store: c.store, model: c.model, log: c.log, pricer: c.models.prices,
		record:  recordBackground(c.store, c.log),
		keyword: c.metrics.KeywordOnly,
		onState: func(from, to string) { c.metrics.Breaker("embeddings", "embedding", to) },
	}
	if c.models.tracker != nil {
		tr := c.models.tracker
		rec := d.record
		d.record = func(r echogate.UsageRecord) { rec(r); tr.Observe(r) }
		d.budget = tr.Check
	}
	k, err := newMemKB(ctx, c.cfg, d)
	if err != nil {
		return nil, err
	}
	wrap := func(t tools.Tool) tools.Tool {
		return tools.WithBreaker(t, tools.BreakerConfig{}, c.log, func(tool, from, to string) {
			c.log.Warn("tool circuit breaker changed state", "tool", tool, "from", from, "to", to)
			c.metrics.Breaker(tool, "tool", to)
		})
	}
	if err := k.registerTools(c.tools, wrap); err != nil {
		return nil, err
	}
	if w := k.worker(); w != nil {
		if c.workers == nil {
			c.workers = map[string]func(context.Context) error{}
		}
		c.workers["consolidation"] = w
	}
	return k, nil
}

// embedIdentity names the embedder recorded with the vectors of knowledge and memory:
// "<provider>:<embeddings.model>@<dims>", or "demo:hash@<dims>" for the offline demo embedder.
func embedIdentity(cfg *Config, injected bool) string {
	if cfg.demoMode() && !injected {
		return fmt.Sprintf("%shash@%d", knowledge.DemoEmbedModel, cfg.Embeddings.Dimensions)
	}
	name := "embeddings"
	if len(cfg.Models.Providers) > 0 {
		name = cfg.Models.Providers[0].Name
	}
	return fmt.Sprintf("%s:%s@%d", name, cfg.Embeddings.Model, cfg.Embeddings.Dimensions)
}

// warnStale logs, once at start, how many documents carry another embedder's vectors (they are
// found by full text only until re-embedded).
func (k *memkb) warnStale(ctx context.Context, log *slog.Logger) {
	stale, err := k.kb.Stale(ctx)
	if err != nil || len(stale) == 0 {
		return
	}
	log.Warn(fmt.Sprintf("knowledge: %d documents were embedded by another model (e.g. %q); their vectors are not searched until you run `echogate knowledge reembed`",
		len(stale), orStr(stale[0].EmbedModel, "unrecorded")), "documents", len(stale))
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
