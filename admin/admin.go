// Package admin is the operator's JSON API, the one the web console uses. Every path is under
// /api/ and guarded by the server's one authentication rule (channels/web.Auth, put around the
// mux by cmd); the decide endpoint checks the operator again, because deciding as the gateway is
// the console's alone.
//
//	GET  /api/info                      version, model, store, channels, whether auth is on
//	GET  /api/sessions                  ?limit= → sessions, newest first
//	GET  /api/sessions/transcript       ?session=&limit= → the transcript, oldest first
//	GET  /api/turns                     ?session=&agent=&limit= → turns, newest first (all sessions without session)
//	                                    (/api/usage and /api/usage/series take ?agent= too; /api/usage sums by_agent)
//	GET  /api/agents                    → the agent profiles, in match order, the default last
//	GET  /api/refusals                  → the latest events the access rules refused, newest first
//	GET  /api/skills                    → {skills: [{name, description, agents, allowed_tools, files, locked}], problems, scripts}
//	GET  /api/turns/detail              ?id= → {turn, usage, messages}: one turn with its ledger entries and transcript
//	GET  /api/approvals                 ?limit= → paused turns waiting for an approval or an answer
//	POST /api/approvals/decide          {"session","call_id","decision","user"} → 202: decide an approval of any session, as the console
//	GET  /api/usage                     ?session=&user=&turn=&since= → {total, records}
//	GET  /api/usage/series              ?days=30&session=&user=&channel= → daily totals (UTC days)
//	GET  /api/budgets                   the configured spend limits (budgets.*)
//	PUT  /api/budgets                   change the spend limits of this process (budgets.go)
//	GET  /api/breakers                  {tools, models}: circuit breaker states
//	GET  /api/memory                    ?user=slack:U1&limit= → current long-term memories (404 when memory is off)
//	GET  /api/knowledge                 ?limit= → knowledge base documents (404 when knowledge is off)
//	GET  /api/names                     ?ids=slack:U1,discord:42 → {names: {id: display name}} of the ids seen
//	…                                   the knowledge and memory actions (memkb.go)
//
// cmd registers the endpoints that belong to other parts beside these (/api/ready,
// /api/mcp/login, /api/schedules). Errors are JSON {"error": "…"} naming what was wrong and how
// to fix it.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/echogate/echogate/tools/mcp"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/agent/router"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/knowledge"
	"github.com/echogate/echogate/memory"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/skills"
)

// ConsoleName is the id a console decision is recorded under ("console", or
// "console:<operator>"); the web chat keeps such names for authenticated requests.
const ConsoleName = "console"

// Store is what the API reads of the gateway's store. Memory and knowledge lists are found on
// it by type assertion (memoryLister, documentLister, memoryGetter): a store without them
// answers those panels with 404.
type Store interface {
	GetSession(ctx context.Context, key echogate.SessionKey) (echogate.SessionInfo, error)
	ListSessions(ctx context.Context, limit int) ([]echogate.SessionInfo, error)
	History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error)
	GetTurn(ctx context.Context, id string) (echogate.TurnRecord, error)
	ListTurns(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.TurnRecord, error)
	SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error)
	ListUsage(ctx context.Context, f echogate.UsageFilter, limit int) ([]echogate.UsageRecord, error)
	GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error)
	ListPending(ctx context.Context, limit int) ([]echogate.PendingTurn, error)
}

// Pipeline is what the API asks of the running pipeline.
type Pipeline interface {
	Agents() pipeline.Agents
	Refusals() []pipeline.Refusal
	// Submit hands an event to the pipeline, as a channel would; it returns quickly.
	Submit(ctx context.Context, ev echogate.InboundEvent) error
}

// Budget is the spend tracker whose limits PUT /api/budgets changes.
type Budget interface {
	Limits() cost.Limits
	SetLimits(cost.Limits) error
}

// ToolBreaker is one tool's row of GET /api/breakers.
type ToolBreaker struct {
	Tool   string `json:"tool"`
	Safety string `json:"safety"`
	// Approval is the effective policy: tools.<name>.approval, else allow for safe tools and ask
	// for the others.
	Approval string `json:"approval"`
	// State is "closed", "half-open" or "open"; "none" when the tool has no breaker.
	State string `json:"state"`
}

// Config is what GET /api/info and the budget and upload endpoints show of the configuration.
type Config struct {
	Version   string
	Model     string // the model the header names: models.default, or the demo model in demo mode
	Demo      bool   // no provider configured: the demo model answers
	Backend   string // the store: "sqlite" or "postgres"
	Auth      bool   // http.auth_token is set
	Approvers int    // len(approval.approvers)
	Budgets   cost.Limits
	DataDir   string            // uploads go to <DataDir>/knowledge
	Scripts   bool              // skills.allow_scripts
	MCPAuth   map[string]string // mcp.servers[].auth by server name
}

// Deps are the parts the API reads and acts on. Store and Pipeline are required; a nil optional
// part answers its endpoints with a 404 that names how to turn it on.
type Deps struct {
	Store    Store
	Pipeline Pipeline
	// Operator reports whether a request is the console's operator (the one authentication
	// rule): deciding an approval as the gateway is the operator's alone. Nil: nobody is.
	Operator func(*http.Request) bool
	// Channels lists the platforms this server runs a channel for.
	Channels func() []string
	// Expect tells the web chat that an event for one of its conversations is coming, so the
	// chat page follows the turn it resumes; it returns a func that takes that back. Nil
	// without the web chat.
	Expect func(channel, eventID string) (forget func())
	// ToolBreakers and ModelBreakers are the rows of GET /api/breakers.
	ToolBreakers  func() []ToolBreaker
	ModelBreakers func() []router.BreakerStatus
	Budget        Budget             // nil: budgets are not available
	Memory        *memory.Service    // nil when memory is off
	Knowledge     *knowledge.Service // nil when the knowledge base is off
	Skills        *skills.Library    // nil unless skills are installed
	// SkillProblems returns the problems of the last skills load (start or reload).
	SkillProblems func() []skills.Problem
	// Names returns the display names seen of the given qualified user ids (unknown ones left
	// out).
	Names func(ids []string) map[string]string
	// MCP reports the MCP servers' state (GET /api/mcp/servers); nil without mcp.servers.
	MCP MCPStatus
	Log *slog.Logger
	Now func() time.Time // nil: time.Now
}

// MCPStatus is the MCP manager's state report (tools/mcp.Manager).
type MCPStatus interface {
	Status() []mcp.ServerStatus
}

// API serves the admin endpoints. Make it with New and mount it with Register.
type API struct {
	cfg Config
	Deps
}

// New checks deps and returns the API; it does no I/O.
func New(cfg Config, deps Deps) (*API, error) {
	switch {
	case deps.Store == nil:
		return nil, errors.New("admin: no store")
	case deps.Pipeline == nil:
		return nil, errors.New("admin: no pipeline")
	}
	if deps.Operator == nil {
		deps.Operator = func(*http.Request) bool { return false }
	}
	if deps.Channels == nil {
		deps.Channels = func() []string { return nil }
	}
	if deps.ToolBreakers == nil {
		deps.ToolBreakers = func() []ToolBreaker { return []ToolBreaker{} }
	}
	if deps.ModelBreakers == nil {
		deps.ModelBreakers = func() []router.BreakerStatus { return nil }
	}
	if deps.SkillProblems == nil {
		deps.SkillProblems = func() []skills.Problem { return nil }
	}
	if deps.Names == nil {
		deps.Names = func([]string) map[string]string { return map[string]string{} }
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &API{cfg: cfg, Deps: deps}, nil
}

// Mux is where the API registers its routes (an http.ServeMux, or one that remembers them).
type Mux interface {
	HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request))
}

// Register registers every endpoint of the package doc on mux, and a JSON 404 for any other
// path under /api/ (more specific patterns registered by others still win).
func (a *API) Register(mux Mux) {
	mux.HandleFunc("GET /api/info", a.handleInfo)
	mux.HandleFunc("GET /api/sessions", func(w http.ResponseWriter, r *http.Request) {
		ss, err := a.Store.ListSessions(r.Context(), limitParam(r, 100))
		WriteJSON(w, nonNil(ss), WrapErr("list sessions", err))
	})
	mux.HandleFunc("GET /api/sessions/transcript", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("session")
		if key == "" {
			WriteError(w, http.StatusBadRequest, "session is required: /api/sessions/transcript?session=web:abc")
			return
		}
		h, err := a.Store.History(r.Context(), echogate.SessionKey(key), limitParam(r, 200))
		WriteJSON(w, nonNil(h), WrapErr("transcript of "+key, err))
	})
	mux.HandleFunc("GET /api/turns", a.handleTurns) // agents.go
	mux.HandleFunc("GET /api/agents", a.handleAgents)
	mux.HandleFunc("GET /api/skills", a.handleSkills)          // skills.go
	mux.HandleFunc("GET /api/mcp/servers", a.handleMCPServers) // mcp.go: the console's MCP tab
	mux.HandleFunc("GET /api/refusals", a.handleRefusals)
	mux.HandleFunc("GET /api/turns/detail", a.handleTurnDetail)
	mux.HandleFunc("GET /api/approvals", a.handleApprovals)
	mux.HandleFunc("POST /api/approvals/decide", a.handleDecide) // decide.go
	mux.HandleFunc("GET /api/usage", a.handleUsage)              // usage.go
	mux.HandleFunc("GET /api/usage/series", a.handleUsageSeries)
	mux.HandleFunc("GET /api/budgets", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, a.cfg.Budgets, nil)
	})
	mux.HandleFunc("PUT /api/budgets", a.putBudgets) // budgets.go
	mux.HandleFunc("GET /api/breakers", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, Breakers{Tools: a.ToolBreakers(), Models: a.ModelBreakers()}, nil)
	})
	mux.HandleFunc("GET /api/memory", a.handleMemory)
	mux.HandleFunc("GET /api/knowledge", a.handleKnowledge)
	mux.HandleFunc("GET /api/names", a.handleNames) // names.go
	a.memkbAPI(mux)                                 // memkb.go
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, "unknown API path "+r.URL.Path+": see GET /api/info and the README's endpoint list")
	})
}

func (a *API) handleInfo(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, map[string]any{
		"version":          a.cfg.Version,
		"model":            a.cfg.Model,
		"demo":             a.cfg.Demo,
		"store":            a.cfg.Backend,
		"channels":         a.Channels(),
		"auth":             a.cfg.Auth,
		"approvers":        a.cfg.Approvers,
		"console_identity": ConsoleName,
	}, nil)
}

// TurnDetail is one turn with what the ledger and the transcript hold of it.
type TurnDetail struct {
	Turn     echogate.TurnRecord      `json:"turn"`
	Usage    []echogate.UsageRecord   `json:"usage"`
	Messages []echogate.StoredMessage `json:"messages"`
}

// detailHistory bounds how far back in its session's transcript a turn's messages are looked for.
const detailHistory = 1000

func (a *API) handleTurnDetail(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		WriteError(w, http.StatusBadRequest, "id is required: /api/turns/detail?id=t_… (ids are listed by GET /api/turns)")
		return
	}
	ctx := r.Context()
	t, err := a.Store.GetTurn(ctx, id)
	if errors.Is(err, echogate.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "no turn "+strconv.Quote(id)+": GET /api/turns lists the recorded turns")
		return
	}
	if err != nil {
		WriteJSON(w, nil, WrapErr("get turn "+id, err))
		return
	}
	usage, err := a.Store.ListUsage(ctx, echogate.UsageFilter{Turn: id}, 500)
	if err != nil {
		WriteJSON(w, nil, WrapErr("usage of turn "+id, err))
		return
	}
	hist, err := a.Store.History(ctx, t.Session, detailHistory)
	if err != nil {
		WriteJSON(w, nil, WrapErr("transcript of "+string(t.Session), err))
		return
	}
	msgs := []echogate.StoredMessage{}
	for _, m := range hist {
		if m.Turn == id {
			msgs = append(msgs, m)
		}
	}
	WriteJSON(w, TurnDetail{Turn: t, Usage: nonNil(usage), Messages: msgs}, nil)
}

// memoryLister and documentLister are what the memory and knowledge panels read of the store.
type (
	memoryLister interface {
		ListMemories(ctx context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error)
	}
	documentLister interface {
		ListDocuments(ctx context.Context, limit int) ([]memrec.Document, error)
	}
)

func (a *API) handleMemory(w http.ResponseWriter, r *http.Request) {
	ml, ok := a.Store.(memoryLister)
	if !(a.Memory != nil) || !ok {
		WriteError(w, http.StatusNotFound, "memory is off on this gateway: set memory.enabled: true in the config to keep long-term memories (it is opt-in)")
		return
	}
	f := memrec.MemoryFilter{Current: true, Now: a.Now(), Limit: limitParam(r, 200)}
	if u := strings.TrimSpace(r.URL.Query().Get("user")); u != "" {
		if !strings.Contains(u, ":") {
			WriteError(w, http.StatusBadRequest, "user "+strconv.Quote(u)+" is not a qualified id: write it as platform:id, e.g. slack:U123")
			return
		}
		f.Owners = []string{memrec.OwnerUser + u}
	}
	ms, err := ml.ListMemories(r.Context(), f)
	WriteJSON(w, nonNil(ms), WrapErr("list memories", err))
}

func (a *API) handleKnowledge(w http.ResponseWriter, r *http.Request) {
	dl, ok := a.Store.(documentLister)
	if !(a.Knowledge != nil) || !ok {
		WriteError(w, http.StatusNotFound, "the knowledge base is off on this gateway: set knowledge.enabled: true in the config and add documents with `echogate knowledge add`")
		return
	}
	ds, err := dl.ListDocuments(r.Context(), limitParam(r, 200))
	WriteJSON(w, nonNil(ds), WrapErr("list knowledge documents", err))
}

// Breakers is the body of GET /api/breakers.
type Breakers struct {
	Tools  []ToolBreaker          `json:"tools"`
	Models []router.BreakerStatus `json:"models"`
}

func limitParam(r *http.Request, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 && n <= 10000 {
		return n
	}
	return def
}

// nonNil turns a nil slice into an empty one, so the JSON is [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WrapErr names the admin operation that failed; nil stays nil.
func WrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("admin: %s: %w", op, err)
}

// WriteJSON answers with v as JSON, or, when err is not nil, with WriteError: 503 when the
// request's context ended, 500 otherwise.
func WriteJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			status = http.StatusServiceUnavailable
		}
		WriteError(w, status, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers with status and the JSON body {"error": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
