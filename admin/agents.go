package admin

import (
	"context"
	"net/http"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/pipeline"
)

// turnsScanLimit bounds the turns read to answer /api/turns?agent=…: the newest this many
// turns are filtered by agent.
const turnsScanLimit = 5000

// handleTurns lists turns, newest first: of one session (?session=), of one agent (?agent=),
// at most ?limit= (default 100).
func (a *API) handleTurns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := limitParam(r, 100)
	agentName := q.Get("agent")
	scan := limit
	if agentName != "" {
		scan = max(limit, turnsScanLimit)
	}
	ts, err := a.Store.ListTurns(r.Context(), echogate.SessionKey(q.Get("session")), scan)
	if agentName != "" {
		kept := ts[:0]
		for _, t := range ts {
			if t.Agent == agentName && len(kept) < limit {
				kept = append(kept, t)
			}
		}
		ts = kept
	}
	WriteJSON(w, nonNil(ts), WrapErr("list turns", err))
}

// AgentInfo is one agent profile as the console shows it.
type AgentInfo struct {
	Name      string   `json:"name"`
	Match     []string `json:"match"` // empty for the default agent: every other place
	Model     string   `json:"model,omitempty"`
	Route     string   `json:"route,omitempty"`
	Tools     []string `json:"tools"` // nil: every tool
	Knowledge *bool    `json:"knowledge,omitempty"`
	Memory    *bool    `json:"memory,omitempty"`
	Budgets   bool     `json:"budgets"`
	Approvers []string `json:"approvers,omitempty"`
	Skills    []string `json:"skills"` // allow-list globs of installed skills; nil: every skill (skills.go)
}

func infoOf(p pipeline.Profile) AgentInfo {
	return AgentInfo{Name: p.Name, Match: p.Match, Model: p.Model, Route: p.Route, Tools: p.Tools,
		Knowledge: p.Knowledge, Memory: p.Memory, Budgets: p.Budget != nil, Approvers: p.Approvers, Skills: p.Skills}
}

// handleAgents lists the agents in match order, the default last.
func (a *API) handleAgents(w http.ResponseWriter, r *http.Request) {
	ag := a.Pipeline.Agents()
	out := make([]AgentInfo, 0, len(ag.List)+1)
	for _, p := range ag.List {
		out = append(out, infoOf(p))
	}
	out = append(out, infoOf(ag.Default))
	WriteJSON(w, out, nil)
}

// handleRefusals lists the latest refused events, newest first.
func (a *API) handleRefusals(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, nonNil(a.Pipeline.Refusals()), nil)
}

// usageByAgent sums the entries f selects per agent profile (one ledger sum per agent), for
// the agents configured now; entries of agents no longer configured count only in the total.
func (a *API) usageByAgent(ctx context.Context, f echogate.UsageFilter) (map[string]echogate.Usage, error) {
	ag := a.Pipeline.Agents()
	names := []string{ag.Default.Name}
	for _, p := range ag.List {
		names = append(names, p.Name)
	}
	out := make(map[string]echogate.Usage, len(names))
	for _, n := range names {
		if f.Agent != "" && f.Agent != n {
			continue
		}
		af := f
		af.Agent = n
		u, err := a.Store.SumUsage(ctx, af)
		if err != nil {
			return nil, err
		}
		out[n] = u
	}
	return out, nil
}
