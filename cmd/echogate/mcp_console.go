package main

import (
	"net/http"
	"time"

	"github.com/echogate/echogate/tools/mcp"
)

// mcpServerView is one MCP server as the console's MCP tab shows it (GET /api/mcp/servers).
type mcpServerView struct {
	Name       string    `json:"name"`
	Transport  string    `json:"transport"`
	Target     string    `json:"target"`
	Auth       string    `json:"auth,omitempty"` // oauth | oauth_per_user | "" (none or static headers)
	State      string    `json:"state"`          // connected | needs login | connecting | not connected
	NeedsLogin bool      `json:"needs_login"`
	Login      string    `json:"login,omitempty"` // the command that logs it in, when it needs login
	Tools      []string  `json:"tools"`
	ToolCount  int       `json:"tool_count"`
	LastError  string    `json:"last_error,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	Attempts   int       `json:"attempts"`
}

// handleMCPServers lists the configured MCP servers with their state (GET /api/mcp/servers):
// an empty list without mcp.servers.
func (g *gateway) handleMCPServers(w http.ResponseWriter, r *http.Request) {
	out := []mcpServerView{}
	if g.mcp == nil {
		writeJSON(w, out, nil)
		return
	}
	auth := map[string]string{}
	for _, s := range g.cfg.MCP.Servers {
		auth[s.Name] = s.Auth
	}
	for _, s := range g.mcp.Status() {
		if s.Tools == nil {
			s.Tools = []string{} // [] in the JSON, not null
		}
		v := mcpServerView{Name: s.Name, Transport: s.Transport, Target: s.Target, Auth: auth[s.Name], NeedsLogin: s.NeedsLogin,
			Tools: s.Tools, ToolCount: len(s.Tools), LastError: s.LastError, Since: s.Since, Attempts: s.Attempts}
		switch {
		case s.Connected:
			v.State = "connected"
		case s.NeedsLogin:
			v.State = "needs login"
			v.Login = "echogate mcp login " + s.Name
		case s.Attempts == 0 && s.LastError == "":
			v.State = "connecting"
		default:
			v.State = "not connected"
		}
		if v.Auth == mcp.AuthOAuthPerUser && s.NeedsLogin {
			v.Login += " (the operator's login lists the tools; each person logs in with /echogate mcp login " + s.Name + ")"
		}
		out = append(out, v)
	}
	writeJSON(w, out, nil)
}
