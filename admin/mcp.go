package admin

import (
	"net/http"
	"time"

	"github.com/echogate/echogate/tools/mcp"
)

// MCPServerView is one MCP server as the console's MCP tab shows it (GET /api/mcp/servers).
type MCPServerView struct {
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
func (a *API) handleMCPServers(w http.ResponseWriter, r *http.Request) {
	out := []MCPServerView{}
	if a.MCP == nil {
		WriteJSON(w, out, nil)
		return
	}
	for _, s := range a.MCP.Status() {
		out = append(out, mcpServerView(s, a.cfg.MCPAuth[s.Name]))
	}
	WriteJSON(w, out, nil)
}

// mcpServerView is s as the MCP tab shows it; auth is its configured mcp.servers[].auth.
func mcpServerView(s mcp.ServerStatus, auth string) MCPServerView {
	if s.Tools == nil {
		s.Tools = []string{} // [] in the JSON, not null
	}
	v := MCPServerView{Name: s.Name, Transport: s.Transport, Target: s.Target, Auth: auth, NeedsLogin: s.NeedsLogin,
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
	return v
}
