// Package memory is the gateway's long-term memory: per-user (and, where configured, per-channel)
// memories with text, embedding, kind, importance, source turn and optional expiry.
//
//   - Service.ContextSection is a pipeline ContextProvider: the user's pinned memories plus the
//     most relevant ones for the message (hybrid vector + full-text search, fused by reciprocal
//     rank), within a token budget. When the embedding endpoint is down it searches full text only.
//   - Remember, Recall and Forget back the remember / recall / forget tools and the CLI.
//   - The consolidation worker (Enqueue after each answered turn, Run in the background) extracts
//     durable facts from the new part of a person's conversation with the chat model, merges
//     near-duplicates, supersedes contradicted facts (keeping history), drops expired ones and
//     advances that person's cursor in the session in the same transaction. In a conversation
//     several people share, each has a job that reads only the turns they requested, and what
//     it finds is theirs alone.
//
// The package declares what it needs (Store, Embedder, Extractor); cmd/echogate adapts the
// storage backends and the model provider to it.
package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/memrec"
)

// Store is what memory persists. storage/sqlite and storage/postgres implement it (checked by
// storage/storagetest.RunMemory). Every method blocks on I/O and honours ctx.
type Store interface {
	PutMemory(ctx context.Context, m memrec.Memory) error
	GetMemory(ctx context.Context, id string) (memrec.Memory, error)
	ListMemories(ctx context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error)
	CountMemories(ctx context.Context, f memrec.MemoryFilter) (int, error)
	DeleteMemory(ctx context.Context, id string) error
	SearchMemoriesVector(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error)
	SearchMemoriesText(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error)

	// MessagesBy returns up to limit transcript entries of the session with Seq > after that
	// belong to turns of userID (the qualified id of the turn's requester), oldest first.
	MessagesBy(ctx context.Context, key echogate.SessionKey, userID string, after int64, limit int) ([]echogate.StoredMessage, error)
	// EnqueueConsolidation, ClaimConsolidation, CompleteConsolidation and ReleaseConsolidation
	// keep one job, with its own cursor, per session and person (ConsolidationJob.UserID).
	EnqueueConsolidation(ctx context.Context, j memrec.ConsolidationJob, notAfter time.Time) error
	ClaimConsolidation(ctx context.Context, worker string, now time.Time, lease time.Duration) (memrec.ConsolidationJob, bool, error)
	CompleteConsolidation(ctx context.Context, j memrec.ConsolidationJob, res memrec.ConsolidationResult) error
	ReleaseConsolidation(ctx context.Context, j memrec.ConsolidationJob, retryAt time.Time, errText string) error
}

// Embedder turns texts into vectors (internal/embed.Embedder satisfies it). It blocks until done
// or ctx ends; usage covers the work done, also on error.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, echogate.Usage, error)
}

// Extractor runs one JSON-only chat completion: system and user prompts in, the model's text
// out. cmd adapts the chat model to it. It blocks until the answer is complete or ctx ends.
type Extractor interface {
	Extract(ctx context.Context, system, user string) (string, echogate.Usage, error)
}

// Hooks connect the service to the rest of the gateway. Every field is optional.
type Hooks struct {
	// ReportUsage receives every usage (embeddings of a snapshot or a tool call, extraction and
	// embeddings of consolidation) exactly once, attributed to session, user and channel.
	ReportUsage func(ctx context.Context, r echogate.UsageRecord)
	// Budget is asked before a consolidation job runs; an error defers the job (it is
	// rescheduled after Config.DeferBackoff) instead of running it.
	Budget func(ctx context.Context, userID, channel string) error
	// KeywordOnly is called each time a search ran without vectors (embedding endpoint down).
	KeywordOnly func()
}

// Config tunes the service. The zero value of every field means the default documented on it.
type Config struct {
	// ChannelMemories includes the channel's shared memories (owner "channel:<platform:channel>")
	// in snapshots and searches. Default false: memories are per user.
	ChannelMemories bool
	PinnedLimit     int // pinned memories in a snapshot; default 20
	RelevantLimit   int // relevant memories in a snapshot; default 8
	// MinSimilarity drops vector hits below this cosine similarity from snapshots (they are noise);
	// default 0.25.
	MinSimilarity float64
	// DuplicateSimilarity: a new fact this close (cosine) to a current memory updates it instead of
	// adding a second one. Default 0.9.
	DuplicateSimilarity float64
	Debounce            time.Duration // consolidation runs this long after the last turn; default 2m
	MaxDelay            time.Duration // … but at most this long after the first; default 15m
	Lease               time.Duration // a job's lease; default 5m (longer than any job)
	PollInterval        time.Duration // how often the worker looks for due jobs; default 10s
	MaxAttempts         int           // failed runs before a job is dropped (until the next turn); default 5
	RetryBackoff        time.Duration // first retry delay after a failure, doubled per attempt; default 1m
	DeferBackoff        time.Duration // delay of a job deferred by the budget; default 10m
	MaxMessages         int           // transcript messages read per job; default 60
	MaxFacts            int           // facts accepted per job; default 10
	MaxMemoryChars      int           // longest memory text; default 500
	WorkerID            string        // lease owner name; default host:pid
	// EmbedModel names the embedder ("provider:model@dims"). It is recorded with every vector
	// written, and searches compare only vectors it made; empty compares every vector (tests,
	// callers that do not track embedders).
	EmbedModel string
	// Now is the clock; default time.Now. After makes the worker's timers; default time.After.
	Now   func() time.Time
	After func(d time.Duration) <-chan time.Time
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.PinnedLimit, 20)
	def(&c.RelevantLimit, 8)
	def(&c.MaxAttempts, 5)
	def(&c.MaxMessages, 60)
	def(&c.MaxFacts, 10)
	def(&c.MaxMemoryChars, 500)
	defD(&c.Debounce, 2*time.Minute)
	defD(&c.MaxDelay, 15*time.Minute)
	defD(&c.Lease, 5*time.Minute)
	defD(&c.PollInterval, 10*time.Second)
	defD(&c.RetryBackoff, time.Minute)
	defD(&c.DeferBackoff, 10*time.Minute)
	if c.MinSimilarity == 0 {
		c.MinSimilarity = 0.25
	}
	if c.DuplicateSimilarity == 0 {
		c.DuplicateSimilarity = 0.9
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), ids.New(""))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	return c
}

// Service is long-term memory. It is safe for concurrent use.
type Service struct {
	cfg   Config
	store Store
	emb   Embedder
	ext   Extractor
	hooks Hooks
	log   *slog.Logger
	ver   *versions // see version.go
}

// New validates cfg and returns the service. store is required; emb may be nil (full-text
// search only) and ext may be nil (no consolidation: Run returns at once). It does no I/O.
func New(cfg Config, store Store, emb Embedder, ext Extractor, hooks Hooks, log *slog.Logger) (*Service, error) {
	if store == nil {
		return nil, fmt.Errorf("memory: %w: no store", ErrInvalid)
	}
	switch {
	case cfg.MinSimilarity < 0 || cfg.MinSimilarity >= 1:
		return nil, fmt.Errorf("memory: %w: min similarity %v must be in [0, 1) (memory.min_similarity)", ErrInvalid, cfg.MinSimilarity)
	case cfg.DuplicateSimilarity < 0 || cfg.DuplicateSimilarity > 1:
		return nil, fmt.Errorf("memory: %w: duplicate similarity %v must be in [0, 1] (memory.duplicate_similarity)", ErrInvalid, cfg.DuplicateSimilarity)
	case cfg.MaxDelay > 0 && cfg.Debounce > cfg.MaxDelay:
		return nil, fmt.Errorf("memory: %w: consolidation debounce %s is longer than its max delay %s (memory.consolidation)", ErrInvalid, cfg.Debounce, cfg.MaxDelay)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg.withDefaults(), store: store, emb: emb, ext: ext, hooks: hooks, log: log, ver: &versions{seed: maphash.MakeSeed()}}, nil
}

// Owners returns the owner keys whose memories a user sees in a channel.
func (s *Service) Owners(userID, channel string) []string {
	var out []string
	if userID != "" {
		out = append(out, memrec.UserOwner(userID))
	}
	if s.cfg.ChannelMemories && channel != "" {
		out = append(out, memrec.ChannelOwner(channel))
	}
	return out
}

func (s *Service) report(ctx context.Context, u echogate.Usage, trig echogate.UsageTrigger, session echogate.SessionKey, userID, channel string) {
	if s.hooks.ReportUsage == nil || (u.InputTokens == 0 && u.OutputTokens == 0 && !u.Failed) {
		return
	}
	s.hooks.ReportUsage(ctx, echogate.UsageRecord{Session: session, UserID: userID, Channel: channel, Trigger: trig, Usage: u, At: s.cfg.Now()})
}

// comparable reports whether m's vector was made by the configured embedder, so that its
// similarity to a query vector means something.
func (s *Service) comparable(m memrec.Memory) bool {
	return s.cfg.EmbedModel == "" || m.EmbedModel == s.cfg.EmbedModel
}

// embedOne embeds text; on failure it logs, counts the degradation and returns nil (callers go
// on without vectors).
func (s *Service) embedOne(ctx context.Context, text string, trig echogate.UsageTrigger, session echogate.SessionKey, userID, channel string) []float32 {
	vs := s.embedMany(ctx, []string{text}, trig, session, userID, channel)
	if vs == nil {
		return nil
	}
	return vs[0]
}

func (s *Service) embedMany(ctx context.Context, texts []string, trig echogate.UsageTrigger, session echogate.SessionKey, userID, channel string) [][]float32 {
	if s.emb == nil || len(texts) == 0 {
		return nil
	}
	vs, u, err := s.emb.Embed(ctx, texts)
	s.report(ctx, u, trig, session, userID, channel)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("memory: embedding failed; using full-text search only", "session", session, "err", err)
			if s.hooks.KeywordOnly != nil {
				s.hooks.KeywordOnly()
			}
		}
		return nil
	}
	return vs
}

// search runs the hybrid search: vector (when vec is set) and full text, fused by reciprocal
// rank. Vector hits below minSim are dropped before fusion.
func (s *Service) search(ctx context.Context, owners []string, text string, vec []float32, limit int, minSim float64) ([]memrec.ScoredMemory, error) {
	now := s.cfg.Now()
	q := memrec.MemoryQuery{Owners: owners, Text: text, Vector: vec, EmbedModel: s.cfg.EmbedModel, Now: now, Limit: limit * 2}
	var vhits []memrec.ScoredMemory
	if len(vec) > 0 {
		var err error
		if vhits, err = s.store.SearchMemoriesVector(ctx, q); err != nil {
			return nil, fmt.Errorf("memory: vector search: %w", err)
		}
	}
	thits, err := s.store.SearchMemoriesText(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("memory: text search: %w", err)
	}
	byID := map[string]memrec.ScoredMemory{}
	var vl, tl []string
	for _, h := range vhits {
		if h.Score < minSim || !s.comparable(h.Memory) {
			continue // noise, or another embedder's vector (its similarity means nothing)
		}
		byID[h.ID] = h
		vl = append(vl, h.ID)
	}
	for _, h := range thits {
		if _, ok := byID[h.ID]; !ok {
			byID[h.ID] = h
		}
		tl = append(tl, h.ID)
	}
	order, score := memrec.Fuse(vl, tl)
	out := make([]memrec.ScoredMemory, 0, min(limit, len(order)))
	for i, id := range order {
		if i >= limit {
			break
		}
		h := byID[id]
		h.Rank, h.Score = i+1, score[id]
		out = append(out, h)
	}
	return out, nil
}

// ContextSection renders the memory snapshot of a turn: the pinned memories of the user (and
// channel, when configured) plus the most relevant ones for q.Text, newest facts first within
// each group, cut to q.Budget tokens (about 4 characters each). It blocks on the store and the
// embedding endpoint; when embedding fails it searches full text only. An empty text means
// nothing to show.
func (s *Service) ContextSection(ctx context.Context, q echogate.ContextQuery) (string, string, error) {
	owners := s.Owners(q.UserID, q.Channel)
	if len(owners) == 0 {
		return "", "", nil
	}
	now := s.cfg.Now()
	pinned, err := s.store.ListMemories(ctx, memrec.MemoryFilter{Owners: owners, Current: true, Now: now, Pinned: true, Limit: s.cfg.PinnedLimit})
	if err != nil {
		return "", "", fmt.Errorf("memory: snapshot for %s: %w", q.UserID, err)
	}
	var relevant []memrec.ScoredMemory
	if strings.TrimSpace(q.Text) != "" {
		vec := s.embedOne(ctx, q.Text, echogate.TriggerMessage, q.Session, q.UserID, q.Channel)
		relevant, err = s.search(ctx, owners, q.Text, vec, s.cfg.RelevantLimit+len(pinned), s.cfg.MinSimilarity)
		if err != nil {
			return "", "", fmt.Errorf("memory: snapshot for %s: %w", q.UserID, err)
		}
	}
	budget := q.Budget * 4
	if budget <= 0 {
		budget = 6000
	}
	var b strings.Builder
	seen := map[string]bool{}
	add := func(m memrec.Memory) bool {
		if seen[m.ID] {
			return true
		}
		line := renderMemory(m)
		if b.Len()+len(line) > budget {
			return false
		}
		seen[m.ID] = true
		b.WriteString(line)
		return true
	}
	for _, m := range pinned {
		if !add(m) {
			break
		}
	}
	n := 0
	for _, m := range relevant {
		if n >= s.cfg.RelevantLimit || !add(m.Memory) {
			break
		}
		n++
	}
	if b.Len() == 0 {
		return "", "", nil
	}
	return "What you remember about this user", "Long-term memories (facts the user shared earlier; newer ones win; they may be outdated):\n" + b.String(), nil
}

func renderMemory(m memrec.Memory) string {
	var b strings.Builder
	b.WriteString("- ")
	b.WriteString(strings.ReplaceAll(strings.TrimSpace(m.Text), "\n", " "))
	b.WriteString(" (")
	b.WriteString(m.Kind)
	if m.Pinned {
		b.WriteString(", pinned")
	}
	if strings.HasPrefix(m.Owner, memrec.OwnerChannel) {
		b.WriteString(", channel")
	}
	b.WriteString(", ")
	b.WriteString(m.UpdatedAt.UTC().Format("2006-01-02"))
	b.WriteString(")\n")
	return b.String()
}
