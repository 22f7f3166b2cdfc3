package main

import (
	"github.com/echogate/echogate/agent/provider/demo"
	"net/http"

	"github.com/echogate/echogate/admin"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/tools/skills"
)

// adminAPI mounts the console's JSON API (package admin) on mux, with the /api/ endpoints that
// belong to other parts of the gateway: readiness, MCP logins and schedules.
func (g *gateway) adminAPI(mux *routeMux) {
	mux.HandleFunc("GET /api/ready", g.handleReady)           // routes.go
	mux.HandleFunc("POST /api/mcp/login", g.handleMCPLogin)   // mcp_oauth.go
	mux.HandleFunc("POST /api/mcp/logout", g.handleMCPLogout) // mcp_logout.go
	g.scheduleAPI(mux)                                        // schedule_api.go
	api, err := admin.New(g.adminConfig(), g.adminDeps())
	if err != nil { // a wiring mistake: every /api/ path says so rather than half an API
		g.log.Error("admin API not mounted", "err", err)
		mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusInternalServerError, err.Error())
		})
		return
	}
	api.Register(mux)
}

func (g *gateway) adminConfig() admin.Config {
	b := g.cfg.Budgets
	return admin.Config{
		Version:   version,
		Model:     g.modelShown(),
		Demo:      g.cfg.demoMode(),
		Backend:   g.backend,
		Auth:      g.cfg.HTTP.AuthToken != "",
		Approvers: len(g.cfg.Approval.Approvers),
		Budgets: cost.Limits{PerTurnUSD: b.PerTurnUSD, PerSessionUSD: b.PerSessionUSD, PerUserDayUSD: b.PerUserDayUSD,
			PerChannelDayUSD: b.PerChannelDayUSD, PerDayUSD: b.PerDayUSD, PerMonthUSD: b.PerMonthUSD},
		DataDir: g.cfg.DataDir,
		Scripts: g.cfg.Skills.AllowScripts,
		MCPAuth: g.mcpAuthOf(),
	}
}

func (g *gateway) adminDeps() admin.Deps {
	d := admin.Deps{
		Store:         g.store,
		Pipeline:      g.pipeline,
		Channels:      g.channelNames,
		ToolBreakers:  g.toolBreakers,
		ModelBreakers: g.modelBreakers,
		Skills:        g.skills,
		SkillProblems: func() []skills.Problem {
			if ps := g.skillProblems.Load(); ps != nil {
				return *ps
			}
			return nil
		},
		Log: g.log,
	}
	if g.names != nil {
		d.Names = g.names.Lookup
	}
	if g.mcp != nil {
		d.MCP = g.mcp
	}
	if g.operator != nil {
		d.Operator = g.operator.Allows
	}
	if g.web != nil {
		d.Expect = g.web.Expect
	}
	if g.models != nil && g.models.tracker != nil {
		d.Budget = g.models.tracker
	}
	if g.memkb != nil {
		d.Memory, d.Knowledge = g.memkb.mem, g.memkb.kb
	}
	return d
}

// The JSON answers of the /api/ endpoints cmd still serves are the admin package's.
func writeJSON(w http.ResponseWriter, v any, err error)        { admin.WriteJSON(w, v, err) }
func writeError(w http.ResponseWriter, status int, msg string) { admin.WriteError(w, status, msg) }
func wrapErr(op string, err error) error                       { return admin.WrapErr(op, err) }

// modelShown is the model the console's header names: the offline demo model in demo mode
// (models.default names the model a key would use, not the one that answers).
func (g *gateway) modelShown() string {
	if g.cfg.demoMode() {
		return demo.ModelName + " (offline)"
	}
	return g.cfg.Models.Default
}

// mcpAuthOf maps each configured MCP server to its auth setting (the console's MCP tab).
func (g *gateway) mcpAuthOf() map[string]string {
	auth := make(map[string]string, len(g.cfg.MCP.Servers))
	for _, s := range g.cfg.MCP.Servers {
		auth[s.Name] = s.Auth
	}
	return auth
}
