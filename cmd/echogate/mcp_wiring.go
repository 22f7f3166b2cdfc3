package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/mcp"
)

// newMCP makes the MCP manager for mcp.servers; nil when none are configured. Its Run connects
// the servers in the background and registers their tools as <server>__<tool>.
// db is the opened store: servers with auth: oauth keep their grants in it, sealed with
// ECHOGATE_SECRET_KEY.
// authorize (may be nil) sends a person the link their own login needs (mcp_grants.go); elicit
// (may be nil: servers are then not offered elicitation) puts servers' questions to people
// (mcp_elicit.go).
func newMCP(cfg *Config, reg *tools.Registry, log *slog.Logger, m *metrics.Metrics, db any, authorize func(context.Context, mcp.Authorization), elicit mcp.Elicitor) (*mcp.Manager, error) {
	if len(cfg.MCP.Servers) == 0 {
		return nil, nil
	}
	tokens, err := mcpTokens(cfg, db)
	if err != nil {
		return nil, err
	}
	servers := mcpServerConfigs(cfg)
	mc := mcp.Config{Servers: servers, ElicitTimeout: time.Duration(cfg.MCP.ElicitTimeout), Authorize: authorize, Elicit: elicit}
	if tokens != nil {
		mc.Tokens, mc.OAuthRedirectURL = tokens, mcpRedirectURL(cfg)
	}
	return mcp.New(mc, reg, log.With("component", "mcp"), func(tool, from, to string) {
		log.Warn("tool circuit breaker changed state", "tool", tool, "from", from, "to", to)
		m.Breaker(tool, "tool", to)
	})
}

// mcpServerConfigs is mcp.servers as tools/mcp takes them.
func mcpServerConfigs(cfg *Config) []mcp.ServerConfig {
	var servers []mcp.ServerConfig
	for _, s := range cfg.MCP.Servers {
		servers = append(servers, mcp.ServerConfig{
			Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir,
			URL: s.URL, Headers: s.Headers, Safety: s.Safety, ToolSafety: s.ToolSafety,
			CallTimeout: time.Duration(s.CallTimeout), MaxOutput: s.MaxOutput,
			AllowChannels: s.AllowChannels, AllowUsers: s.AllowUsers,
			Auth: s.Auth, ClientID: s.ClientID, ClientSecret: s.ClientSecret,
			ClientMetadataURL: s.ClientMetadataURL, Scopes: s.Scopes,
		})
	}
	return servers
}

// defaultMCPReady is how long turns wait for MCP servers at start when mcp.ready_timeout is 0.
const defaultMCPReady = 10 * time.Second

// waitMCP blocks until every configured MCP server has connected or failed its first attempt,
// at most mcp.ready_timeout (or until ctx ends), so that the first turn — and the replay of
// unfinished ones — is offered the servers' tools. Servers that are late or down are named in
// a warning; their tools join when they connect.
func (c *core) waitMCP(ctx context.Context) {
	if c.mcp == nil {
		return
	}
	bound := time.Duration(c.cfg.MCP.ReadyTimeout)
	if bound == 0 {
		bound = defaultMCPReady
	}
	names := make([]string, 0, len(c.cfg.MCP.Servers))
	for _, s := range c.cfg.MCP.Servers {
		names = append(names, s.Name)
	}
	c.log.Info("waiting for MCP servers", "servers", strings.Join(names, ","), "bound", bound)
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	err := c.mcp.Ready(wctx)
	var nr *mcp.NotReadyError
	if !errors.As(err, &nr) {
		return
	}
	for _, name := range nr.Late {
		c.log.Warn(fmt.Sprintf("MCP server %q did not connect within %s; continuing without its tools until it does (raise mcp.ready_timeout to wait longer)", name, bound), "server", name)
	}
	for name, why := range nr.Failed {
		c.log.Warn(fmt.Sprintf("MCP server %q is unavailable; continuing without its tools (run `echogate doctor`)", name), "server", name, "err", why)
	}
}
