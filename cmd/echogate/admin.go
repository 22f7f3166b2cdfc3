package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/router"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/pipeline"
)

// adminAPI registers the JSON API the web console uses. Every path is under /api/ and guarded
// by the server's one authentication rule (web.Auth, see routes.go):
//
//	GET  /api/info                      version, model, store, channels, whether auth is on
//	GET  /api/ready                     /readyz's status with each part's detail (storage, channels, MCP servers)
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
//	GET  /api/breakers                  {tools, models}: circuit breaker states
//	GET  /api/memory                    ?user=slack:U1&limit= → current long-term memories (404 when memory is off)
//	GET  /api/knowledge                 ?limit= → knowledge base documents (404 when knowledge is off)
//	GET  /api/names                     ?ids=slack:U1,discord:42 → {names: {id: display name}} of the ids seen
//
// Errors are JSON {"error": "…"} naming what was wrong and how to fix it.
func (g *gateway) adminAPI(mux *routeMux) {
	mux.HandleFunc("GET /api/info", g.handleInfo)
	mux.HandleFunc("GET /api/ready", g.handleReady)
	mux.HandleFunc("POST /api/mcp/login", g.handleMCPLogin)    // mcp_oauth.go
	mux.HandleFunc("GET /api/mcp/servers", g.handleMCPServers) // mcp_console.go: the console's MCP tab
	mux.HandleFunc("POST /api/mcp/logout", g.handleMCPLogout)  // mcp_logout.go
	mux.HandleFunc("GET /api/sessions", func(w http.ResponseWriter, r *http.Request) {
		ss, err := g.store.ListSessions(r.Context(), limitParam(r, 100))
		writeJSON(w, nonNil(ss), wrapErr("list sessions", err))
	})
	mux.HandleFunc("GET /api/sessions/transcript", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("session")
		if key == "" {
			writeError(w, http.StatusBadRequest, "session is required: /api/sessions/transcript?session=web:abc")
			return
		}
		h, err := g.store.History(r.Context(), echogate.SessionKey(key), limitParam(r, 200))
		writeJSON(w, nonNil(h), wrapErr("transcript of "+key, err))
	})
	mux.HandleFunc("GET /api/turns", g.handleTurns) // agents_api.go
	mux.HandleFunc("GET /api/agents", g.handleAgents)
	mux.HandleFunc("GET /api/skills", g.handleSkills) // skills_api.go
	mux.HandleFunc("GET /api/refusals", g.handleRefusals)
	mux.HandleFunc("GET /api/turns/detail", g.handleTurnDetail)
	mux.HandleFunc("GET /api/approvals", g.handleApprovals)
	mux.HandleFunc("POST /api/approvals/decide", g.handleDecide)
	mux.HandleFunc("GET /api/usage", g.handleUsage)
	mux.HandleFunc("GET /api/usage/series", g.handleUsageSeries)
	mux.HandleFunc("GET /api/budgets", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, budgetsView(g.cfg.Budgets), nil)
	})
	mux.HandleFunc("GET /api/breakers", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, breakersView{Tools: g.toolBreakers(), Models: g.modelBreakers()}, nil)
	})
	mux.HandleFunc("GET /api/memory", g.handleMemory)
	mux.HandleFunc("GET /api/knowledge", g.handleKnowledge)
	mux.HandleFunc("GET /api/names", g.handleNames)
	g.memkbAPI(mux)
	g.scheduleAPI(mux) // schedule_api.go
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "unknown API path "+r.URL.Path+": see GET /api/info and the README's endpoint list")
	})
}

func (g *gateway) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{
		"version":          version,
		"model":            g.cfg.Models.Default,
		"demo":             g.cfg.demoMode(),
		"store":            g.backend,
		"channels":         g.channelNames(),
		"auth":             g.cfg.HTTP.AuthToken != "",
		"approvers":        len(g.cfg.Approval.Approvers),
		"console_identity": consoleName,
	}, nil)
}

// turnDetail is one turn with what the ledger and the transcript hold of it.
type turnDetail struct {
	Turn     echogate.TurnRecord      `json:"turn"`
	Usage    []echogate.UsageRecord   `json:"usage"`
	Messages []echogate.StoredMessage `json:"messages"`
}

// detailHistory bounds how far back in its session's transcript a turn's messages are looked for.
const detailHistory = 1000

func (g *gateway) handleTurnDetail(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		writeError(w, http.StatusBadRequest, "id is required: /api/turns/detail?id=t_… (ids are listed by GET /api/turns)")
		return
	}
	ctx := r.Context()
	t, err := g.store.GetTurn(ctx, id)
	if errors.Is(err, echogate.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no turn "+strconv.Quote(id)+": GET /api/turns lists the recorded turns")
		return
	}
	if err != nil {
		writeJSON(w, nil, wrapErr("get turn "+id, err))
		return
	}
	usage, err := g.store.ListUsage(ctx, echogate.UsageFilter{Turn: id}, 500)
	if err != nil {
		writeJSON(w, nil, wrapErr("usage of turn "+id, err))
		return
	}
	hist, err := g.store.History(ctx, t.Session, detailHistory)
	if err != nil {
		writeJSON(w, nil, wrapErr("transcript of "+string(t.Session), err))
		return
	}
	msgs := []echogate.StoredMessage{}
	for _, m := range hist {
		if m.Turn == id {
			msgs = append(msgs, m)
		}
	}
	writeJSON(w, turnDetail{Turn: t, Usage: nonNil(usage), Messages: msgs}, nil)
}

// approvalView is a paused turn as the console lists it (the agent state stays on the server).
type approvalView struct {
	Session     echogate.SessionKey `json:"session"`
	Platform    string              `json:"platform"`
	Turn        string              `json:"turn"`
	Kind        echogate.PauseKind  `json:"kind"`
	CallID      string              `json:"call_id"`
	Tool        string              `json:"tool"`
	Args        string              `json:"args,omitempty"`
	RequestedBy string              `json:"requested_by"`
	Prompt      echogate.MessageRef `json:"prompt"`
	CreatedAt   time.Time           `json:"created_at"`
	ExpiresAt   time.Time           `json:"expires_at,omitzero"`
}

// maxArgsShown caps the tool arguments the approvals list shows.
const maxArgsShown = 2000

func (g *gateway) handleApprovals(w http.ResponseWriter, r *http.Request) {
	ps, err := g.store.ListPending(r.Context(), limitParam(r, 100))
	if err != nil {
		writeJSON(w, nil, wrapErr("list pending approvals", err))
		return
	}
	out := make([]approvalView, 0, len(ps))
	for _, p := range ps {
		out = append(out, approvalView{
			Session: p.Session, Platform: platformOf(p.Session), Turn: p.Turn, Kind: p.Kind, CallID: p.CallID, Tool: p.Tool,
			Args: pendingArgs(p), RequestedBy: p.RequestedBy, Prompt: p.Prompt, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
		})
	}
	writeJSON(w, out, nil)
}

// pendingArgs returns the paused call's arguments from the agent state, secrets masked and
// capped as in the approval prompt; empty when the state does not hold them.
func pendingArgs(p echogate.PendingTurn) string {
	var st agent.State
	if json.Unmarshal(p.State, &st) != nil {
		return ""
	}
	for _, c := range st.Pending {
		if c.ID == p.CallID {
			return pipeline.RedactArgs(c.Arguments, maxArgsShown)
		}
	}
	return ""
}

func platformOf(k echogate.SessionKey) string {
	p, _, _ := strings.Cut(string(k), ":")
	return p
}

func (g *gateway) handleUsage(w http.ResponseWriter, r *http.Request) {
	f := echogate.UsageFilter{Session: echogate.SessionKey(r.URL.Query().Get("session")), UserID: r.URL.Query().Get("user"),
		Turn: r.URL.Query().Get("turn"), Agent: r.URL.Query().Get("agent")}
	if s := r.URL.Query().Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "since must be an RFC 3339 time, e.g. 2026-11-30T00:00:00Z")
			return
		}
		f.Since = t
	}
	sum, err := g.store.SumUsage(r.Context(), f)
	if err != nil {
		writeJSON(w, nil, wrapErr("sum usage", err))
		return
	}
	byAgent, err := g.usageByAgent(r.Context(), f) // agents_api.go
	if err != nil {
		writeJSON(w, nil, wrapErr("sum usage by agent", err))
		return
	}
	recs, err := g.store.ListUsage(r.Context(), f, limitParam(r, 500))
	writeJSON(w, map[string]any{"total": sum, "by_agent": byAgent, "records": nonNil(recs)}, wrapErr("list usage", err))
}

// maxSeriesDays bounds GET /api/usage/series: one ledger sum per day.
const maxSeriesDays = 366

// usageDay is one day of the spend series.
type usageDay struct {
	Day          string  `json:"day"` // YYYY-MM-DD, UTC
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	// CachedInputTokens are the part of InputTokens read from the provider's prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
}

// usageSeries is the body of GET /api/usage/series.
type usageSeries struct {
	Timezone    string         `json:"timezone"`
	From        string         `json:"from"` // first day, inclusive
	To          string         `json:"to"`   // last day (today), inclusive
	Days        []usageDay     `json:"days"` // oldest first, one entry per day, zero-filled
	Total       echogate.Usage `json:"total"`
	Today       echogate.Usage `json:"today"`
	MonthToDate echogate.Usage `json:"month_to_date"`
}

// usageSummer is the part of the store the series needs.
type usageSummer interface {
	SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error)
}

// seriesOf sums the ledger per UTC day for the `days` days ending today (now's day), plus the
// month to date. It makes days+1 store calls and stops at the first error.
func seriesOf(ctx context.Context, s usageSummer, f echogate.UsageFilter, days int, now time.Time) (usageSeries, error) {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	first := today.AddDate(0, 0, -(days - 1))
	out := usageSeries{Timezone: "UTC", From: first.Format(time.DateOnly), To: today.Format(time.DateOnly), Days: make([]usageDay, 0, days)}
	for d := first; !d.After(today); d = d.AddDate(0, 0, 1) {
		df := f
		df.Since, df.Until = d, d.AddDate(0, 0, 1)
		u, err := s.SumUsage(ctx, df)
		if err != nil {
			return usageSeries{}, fmt.Errorf("sum usage of %s: %w", d.Format(time.DateOnly), err)
		}
		out.Days = append(out.Days, usageDay{Day: d.Format(time.DateOnly), CostUSD: u.CostUSD, InputTokens: u.InputTokens,
			OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens})
		out.Total = addUsage(out.Total, u)
		out.Today = u
	}
	mf := f
	mf.Since = time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	u, err := s.SumUsage(ctx, mf)
	if err != nil {
		return usageSeries{}, fmt.Errorf("sum usage of the month: %w", err)
	}
	out.MonthToDate = u
	return out, nil
}

func addUsage(a, b echogate.Usage) echogate.Usage {
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.CachedInputTokens += b.CachedInputTokens
	a.CostUSD += b.CostUSD
	return a
}

func (g *gateway) handleUsageSeries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	days := 30
	if s := q.Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxSeriesDays {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("days %q must be a whole number from 1 to %d, e.g. days=30", s, maxSeriesDays))
			return
		}
		days = n
	}
	f := echogate.UsageFilter{Session: echogate.SessionKey(q.Get("session")), UserID: q.Get("user"), Channel: q.Get("channel"), Agent: q.Get("agent")}
	s, err := seriesOf(r.Context(), g.store, f, days, time.Now())
	writeJSON(w, s, wrapErr("usage series", err))
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

func (g *gateway) handleMemory(w http.ResponseWriter, r *http.Request) {
	ml, ok := g.store.(memoryLister)
	if !g.memoryOn() || !ok {
		writeError(w, http.StatusNotFound, "memory is off on this gateway: set memory.enabled: true in the config to keep long-term memories (it is opt-in)")
		return
	}
	f := memrec.MemoryFilter{Current: true, Now: time.Now(), Limit: limitParam(r, 200)}
	if u := strings.TrimSpace(r.URL.Query().Get("user")); u != "" {
		if !strings.Contains(u, ":") {
			writeError(w, http.StatusBadRequest, "user "+strconv.Quote(u)+" is not a qualified id: write it as platform:id, e.g. slack:U123")
			return
		}
		f.Owners = []string{memrec.OwnerUser + u}
	}
	ms, err := ml.ListMemories(r.Context(), f)
	writeJSON(w, nonNil(ms), wrapErr("list memories", err))
}

func (g *gateway) handleKnowledge(w http.ResponseWriter, r *http.Request) {
	dl, ok := g.store.(documentLister)
	if !g.knowledgeOn() || !ok {
		writeError(w, http.StatusNotFound, "the knowledge base is off on this gateway: set knowledge.enabled: true in the config and add documents with `echogate knowledge add`")
		return
	}
	ds, err := dl.ListDocuments(r.Context(), limitParam(r, 200))
	writeJSON(w, nonNil(ds), wrapErr("list knowledge documents", err))
}

// budgets is the configured spend limits in USD; 0 means no limit.
type budgets struct {
	PerTurnUSD       float64 `json:"per_turn_usd"`
	PerSessionUSD    float64 `json:"per_session_usd"`
	PerUserDayUSD    float64 `json:"per_user_day_usd"`
	PerChannelDayUSD float64 `json:"per_channel_day_usd"`
	PerDayUSD        float64 `json:"per_day_usd"`
	PerMonthUSD      float64 `json:"per_month_usd"`
}

func budgetsView(b BudgetsConfig) budgets {
	return budgets{PerTurnUSD: b.PerTurnUSD, PerSessionUSD: b.PerSessionUSD, PerUserDayUSD: b.PerUserDayUSD,
		PerChannelDayUSD: b.PerChannelDayUSD, PerDayUSD: b.PerDayUSD, PerMonthUSD: b.PerMonthUSD}
}

// breakersView is the body of GET /api/breakers.
type breakersView struct {
	Tools  []toolBreaker          `json:"tools"`
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

// wrapErr names the admin operation that failed; nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("admin: %s: %w", op, err)
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
