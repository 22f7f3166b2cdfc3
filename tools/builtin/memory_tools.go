package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/tools"
)

// Stable names of the memory and knowledge tools.
const (
	RememberName        = "remember"
	RecallName          = "recall"
	ForgetName          = "forget"
	KnowledgeSearchName = "knowledge_search"
)

// Caller identifies who a tool call acts for (tools.Caller, attached by the pipeline).
type Caller = tools.Caller

// WithCaller and CallerFrom are tools.WithCaller and tools.CallerFrom.
var (
	WithCaller = tools.WithCaller
	CallerFrom = tools.CallerFrom
)

// MemoryBackend is what the memory tools need; cmd/echogate adapts memory.Service to it. Every
// method blocks on I/O and honours ctx; a Go error whose chain holds echogate.ErrNotFound is
// shown to the model as "no such memory".
type MemoryBackend interface {
	Remember(ctx context.Context, c Caller, text, kind string, pinned bool, ttl time.Duration) (memrec.Memory, error)
	Recall(ctx context.Context, c Caller, query string, limit int) ([]memrec.ScoredMemory, error)
	Forget(ctx context.Context, c Caller, id string) (memrec.Memory, error)
}

// KnowledgeBackend is what knowledge_search needs; knowledge.Service satisfies it.
type KnowledgeBackend interface {
	Search(ctx context.Context, query string, limit int) ([]memrec.Passage, bool, error)
}

// MemoryToolsConfig configures remember, recall and forget. The zero value is the default.
type MemoryToolsConfig struct {
	MaxResults int // recall results; default 10, at most 50
}

// NewMemoryTools returns remember (Sensitive), recall (Safe) and forget (Sensitive), acting on
// the long-term memory of the user in the call's Caller.
func NewMemoryTools(cfg MemoryToolsConfig, b MemoryBackend) ([]tools.Tool, error) {
	if b == nil {
		return nil, errors.New("builtin: memory tools need a memory backend")
	}
	if cfg.MaxResults <= 0 || cfg.MaxResults > 50 {
		cfg.MaxResults = 10
	}
	return []tools.Tool{
		&remember{b: b, spec: tools.Spec{Name: RememberName, Safety: tools.Sensitive,
			Description: "Save one short fact about the user to long-term memory, so it is known in later conversations. Use it when the user asks you to remember something or states a lasting preference.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"text":{"type":"string","description":"The fact, short and in third person, e.g. \"Prefers answers in German\".","minLength":1,"maxLength":500},` +
				`"kind":{"type":"string","enum":["fact","preference","ephemeral","note"],"description":"Default note."},` +
				`"pinned":{"type":"boolean","description":"Always show this memory (standing instructions). Default false."},` +
				`"ttl":{"type":"string","description":"Forget it after this long, e.g. \"72h\" or \"14d\" (for temporary facts)."}` +
				`},"required":["text"],"additionalProperties":false}`)}},
		&recall{b: b, max: cfg.MaxResults, spec: tools.Spec{Name: RecallName, Safety: tools.Safe,
			Description: "Search the user's long-term memories. Returns matching memories with their ids.",
			Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
				`"query":{"type":"string","description":"What to look for; empty lists the newest memories."},`+
				`"limit":{"type":"integer","minimum":1,"maximum":%d}},"additionalProperties":false}`, cfg.MaxResults))}},
		&forget{b: b, spec: tools.Spec{Name: ForgetName, Safety: tools.Sensitive,
			Description: "Delete one of the user's long-term memories by id (find ids with recall).",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The memory id, e.g. m_01J…"}},"required":["id"],"additionalProperties":false}`)}},
	}, nil
}

func callerOr(ctx context.Context, tool string) (Caller, tools.Result, bool) {
	c, ok := CallerFrom(ctx)
	if !ok {
		return c, tools.Errorf("%s: not available here: the gateway did not say which user this conversation belongs to", tool), false
	}
	return c, tools.Result{}, true
}

type remember struct {
	b    MemoryBackend
	spec tools.Spec
}

func (t *remember) Spec() tools.Spec { return t.spec }

// Call stores the fact; it blocks on the memory backend.
func (t *remember) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var args struct {
		Text   string `json:"text"`
		Kind   string `json:"kind"`
		Pinned bool   `json:"pinned"`
		TTL    string `json:"ttl"`
	}
	const example = `{"text": "Favourite editor is Helix", "kind": "preference"}`
	if res, ok := decodeArgs(RememberName, raw, &args, example); !ok {
		return res, nil
	}
	c, res, ok := callerOr(ctx, RememberName)
	if !ok {
		return res, nil
	}
	args.Text = strings.TrimSpace(args.Text)
	if args.Text == "" {
		return tools.Errorf(`remember: argument "text" is required and must not be empty; example: %s`, example), nil
	}
	switch args.Kind {
	case "", memrec.KindFact, memrec.KindPreference, memrec.KindEphemeral, memrec.KindNote:
	default:
		return tools.Errorf(`remember: argument "kind" is %q; use fact, preference, ephemeral or note`, args.Kind), nil
	}
	var ttl time.Duration
	if args.TTL != "" {
		d, err := parseTTL(args.TTL)
		if err != nil {
			return tools.Errorf("remember: argument \"ttl\": %v", err), nil
		}
		ttl = d
	}
	m, err := t.b.Remember(ctx, c, args.Text, args.Kind, args.Pinned, ttl)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, err
		}
		return tools.Errorf("remember: could not save the memory: %v", err), nil
	}
	out := fmt.Sprintf("Saved memory %s: %s", m.ID, m.Text)
	if !m.ExpiresAt.IsZero() {
		out += " (until " + m.ExpiresAt.UTC().Format(time.RFC3339) + ")"
	}
	return tools.Result{Content: out}, nil
}

func parseTTL(s string) (time.Duration, error) {
	var (
		d   time.Duration
		err error
	)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err = fmt.Sscanf(n, "%d", &days); err == nil {
			d = time.Duration(days) * 24 * time.Hour
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 || d > 366*24*time.Hour {
		return 0, fmt.Errorf("%q is not a duration like 72h or 14d (at most a year)", s)
	}
	return d, nil
}

type recall struct {
	b    MemoryBackend
	max  int
	spec tools.Spec
}

func (t *recall) Spec() tools.Spec { return t.spec }

// Call searches the caller's memories; it blocks on the memory backend.
func (t *recall) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var args struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if res, ok := decodeArgs(RecallName, raw, &args, `{"query": "editor"}`); !ok {
		return res, nil
	}
	c, res, ok := callerOr(ctx, RecallName)
	if !ok {
		return res, nil
	}
	if args.Limit <= 0 || args.Limit > t.max {
		args.Limit = t.max
	}
	hits, err := t.b.Recall(ctx, c, args.Query, args.Limit)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, err
		}
		return tools.Errorf("recall: search failed: %v", err), nil
	}
	if len(hits) == 0 {
		return tools.Result{Content: "No memories found."}, nil
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "- %s: %s (%s, updated %s)\n", h.ID, h.Text, h.Kind, h.UpdatedAt.UTC().Format("2006-01-02"))
	}
	return tools.Result{Content: b.String()}, nil
}

type forget struct {
	b    MemoryBackend
	spec tools.Spec
}

func (t *forget) Spec() tools.Spec { return t.spec }

// Call deletes one of the caller's memories; it blocks on the memory backend.
func (t *forget) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var args struct {
		ID string `json:"id"`
	}
	if res, ok := decodeArgs(ForgetName, raw, &args, `{"id": "m_01J…"}`); !ok {
		return res, nil
	}
	c, res, ok := callerOr(ctx, ForgetName)
	if !ok {
		return res, nil
	}
	if strings.TrimSpace(args.ID) == "" {
		return tools.Errorf(`forget: argument "id" is required; find ids with recall`), nil
	}
	m, err := t.b.Forget(ctx, c, strings.TrimSpace(args.ID))
	switch {
	case errors.Is(err, echogate.ErrNotFound):
		return tools.Errorf("forget: no memory %s of this user; find ids with recall", args.ID), nil
	case err != nil:
		if ctx.Err() != nil {
			return tools.Result{}, err
		}
		return tools.Errorf("forget: %v", err), nil
	}
	return tools.Result{Content: "Forgot memory " + m.ID + ": " + m.Text}, nil
}

// KnowledgeSearchConfig configures knowledge_search. The zero value is the default.
type KnowledgeSearchConfig struct {
	MaxResults int // passages; default 5, at most 20
	MaxChars   int // of the whole result; default 12000
}

// NewKnowledgeSearch returns knowledge_search (Safe): hybrid search of the knowledge base,
// returning passages with citation ids, sources and positions.
func NewKnowledgeSearch(cfg KnowledgeSearchConfig, b KnowledgeBackend) (tools.Tool, error) {
	if b == nil {
		return nil, errors.New("builtin: knowledge_search needs a knowledge backend")
	}
	if cfg.MaxResults <= 0 || cfg.MaxResults > 20 {
		cfg.MaxResults = 5
	}
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = 12000
	}
	// Shareable: the knowledge base is the team's, the same for everyone who asks.
	return &knowledgeSearch{b: b, cfg: cfg, spec: tools.Spec{Name: KnowledgeSearchName, Safety: tools.Safe, Shareable: true,
		Description: "Search the team's knowledge base (ingested documents). Returns passages with citation ids like [d_…#3], their source file and position; cite the ids you use.",
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","description":"What to look for, in natural language or keywords.","minLength":1},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d}},"required":["query"],"additionalProperties":false}`, cfg.MaxResults))}}, nil
}

type knowledgeSearch struct {
	b    KnowledgeBackend
	cfg  KnowledgeSearchConfig
	spec tools.Spec
}

func (t *knowledgeSearch) Spec() tools.Spec { return t.spec }

// Call searches; it blocks on the embedding endpoint and the store.
func (t *knowledgeSearch) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var args struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	const example = `{"query": "how do I install on Linux?"}`
	if res, ok := decodeArgs(KnowledgeSearchName, raw, &args, example); !ok {
		return res, nil
	}
	if strings.TrimSpace(args.Query) == "" {
		return tools.Errorf(`knowledge_search: argument "query" is required; example: %s`, example), nil
	}
	if args.Limit <= 0 || args.Limit > t.cfg.MaxResults {
		args.Limit = t.cfg.MaxResults
	}
	ps, keywordOnly, err := t.b.Search(ctx, args.Query, args.Limit)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, err
		}
		return tools.Errorf("knowledge_search: search failed: %v", err), nil
	}
	if len(ps) == 0 {
		return tools.Result{Content: "No passages found in the knowledge base."}, nil
	}
	var b strings.Builder
	if keywordOnly {
		b.WriteString("(keyword search only: the embedding service is unavailable)\n")
	}
	for _, p := range ps {
		entry := fmt.Sprintf("\n[%s] %s", p.Ref(), p.Title)
		if p.Heading != "" {
			entry += " › " + p.Heading
		}
		entry += fmt.Sprintf(" (source: %s, chunk %d, bytes %d-%d)\n%s\n", p.Source, p.Seq, p.Start, p.End, strings.TrimSpace(p.Text))
		if b.Len()+len(entry) > t.cfg.MaxChars {
			break
		}
		b.WriteString(entry)
	}
	return tools.Result{Content: b.String()}, nil
}
