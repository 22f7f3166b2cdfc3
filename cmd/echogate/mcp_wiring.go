package main

import (
	"log/slog"
	"time"

	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/mcp"
)

// newMCP makes the MCP manager for mcp.servers; nil when none are configured. Its Run connects
// the servers in the background and registers their tools as <server>__<tool>.
func newMCP(cfg *Config, reg *tools.Registry, log *slog.Logger, m *metrics.Metrics) (*mcp.Manager, error) {
	if len(cfg.MCP.Servers) == 0 {
		return nil, nil
	}
	var servers []mcp.ServerConfig
	for _, s := range cfg.MCP.Servers {
		servers = append(servers, mcp.ServerConfig{
			Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir,
			URL: s.URL, Headers: s.Headers, Safety: s.Safety, ToolSafety: s.ToolSafety,
			CallTimeout: time.Duration(s.CallTimeout), MaxOutput: s.MaxOutput,
			AllowChannels: s.AllowChannels, AllowUsers: s.AllowUsers,
		})
	}
	return mcp.New(mcp.Config{Servers: servers}, reg, log.With("component", "mcp"), func(tool, from, to string) {
		log.Warn("tool circuit breaker changed state", "tool", tool, "from", from, "to", to)
		m.Breaker(tool, "tool", to)
	})
}
