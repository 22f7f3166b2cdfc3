package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/mcp"
)

// mcpGrantsView answers the chat's mcp command from the Manager and the sealed store: only the
// servers with auth: oauth_per_user, only the sender's own grants.
type mcpGrantsView struct {
	m       *mcp.Manager
	tokens  *mcp.SealedTokenStore
	servers []string // with auth: oauth_per_user, sorted
}

// mcpGrants is the mcp command's view; nil (the command says so) without per-person servers.
func (c *core) mcpGrants() pipeline.MCPGrants {
	var servers []string
	for _, s := range c.cfg.MCP.Servers {
		if s.Auth == mcp.AuthOAuthPerUser {
			servers = append(servers, s.Name)
		}
	}
	if len(servers) == 0 || c.mcp == nil || c.mcp.Logins() == nil {
		return nil
	}
	ts, err := mcpTokens(c.cfg, c.store)
	sealed, ok := ts.(*mcp.SealedTokenStore)
	if err != nil || !ok {
		return nil
	}
	sort.Strings(servers)
	return &mcpGrantsView{m: c.mcp, tokens: sealed, servers: servers}
}

func (v *mcpGrantsView) perUser(server string) error {
	i := sort.SearchStrings(v.servers, server)
	if i == len(v.servers) || v.servers[i] != server {
		return fmt.Errorf("%q is not a server you log in to with your own account (those are: %v)", server, v.servers)
	}
	return nil
}

func (v *mcpGrantsView) Grants(ctx context.Context, user string) ([]pipeline.MCPGrant, []string, error) {
	if user == "" {
		return nil, v.servers, nil
	}
	infos, err := v.tokens.List(ctx, user)
	if err != nil {
		return nil, nil, err
	}
	var out []pipeline.MCPGrant
	for _, g := range infos {
		if g.Key.User == user && v.perUser(g.Key.Server) == nil {
			out = append(out, pipeline.MCPGrant{Server: g.Key.Server, ExpiresAt: g.ExpiresAt})
		}
	}
	return out, v.servers, nil
}

func (v *mcpGrantsView) Login(ctx context.Context, server, user string) (string, error) {
	if err := v.perUser(server); err != nil {
		return "", err
	}
	if user == "" {
		return "", fmt.Errorf("this conversation has no person to log in")
	}
	start, err := v.m.Logins().Begin(ctx, server, user)
	if err != nil {
		return "", err
	}
	return start.URL, nil
}

func (v *mcpGrantsView) Revoke(ctx context.Context, server, user string) error {
	if err := v.perUser(server); err != nil {
		return err
	}
	if user == "" {
		return fmt.Errorf("this conversation has no person")
	}
	return v.m.Logout(ctx, server, user)
}
