package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
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

// mcpAuthorizer sends a person whose call needs their own login (auth: oauth_per_user) the
// authorization link, privately: Slack ephemeral, a DM, or the web chat and terminal (one
// person each). In a shared conversation elsewhere (a Discord channel) the link is not posted,
// since whoever opens it logs in as that person: they are told to ask `/echogate mcp login
// NAME`, whose answer is private. One link per person and server per LoginTTL.
type mcpAuthorizer struct {
	mu       sync.Mutex
	m        *mcp.Manager
	repliers map[string]pipeline.Replier
	log      *slog.Logger
	sent     map[mcp.TokenKey]time.Time
}

// wire gives it the Manager and the repliers, once the pipeline is made.
func (a *mcpAuthorizer) wire(m *mcp.Manager, repliers map[string]pipeline.Replier, log *slog.Logger) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.m, a.repliers, a.log = m, repliers, log
}

// privatePlatforms show a message to one person in any conversation (PrivateTo), or are one
// person's conversation.
var privatePlatforms = map[string]bool{echogate.PlatformSlack: true, echogate.PlatformWeb: true, echogate.PlatformConsole: true}

func (a *mcpAuthorizer) authorize(ctx context.Context, z mcp.Authorization) {
	a.mu.Lock()
	m, rep, log := a.m, a.repliers[z.Caller.Conversation.Platform], a.log
	key := mcp.TokenKey{Server: z.Server, User: z.Caller.UserID}
	now := time.Now()
	if a.sent == nil {
		a.sent = map[mcp.TokenKey]time.Time{}
	}
	for k, at := range a.sent {
		if now.Sub(at) > mcp.LoginTTL {
			delete(a.sent, k)
		}
	}
	_, recent := a.sent[key]
	if !recent && len(a.sent) < 1024 {
		a.sent[key] = now
	}
	a.mu.Unlock()
	if m == nil || rep == nil || recent || m.Logins() == nil {
		return
	}
	conv := z.Caller.Conversation
	_, bare, _ := strings.Cut(z.Caller.UserID, ":")
	text := fmt.Sprintf("To use %s, authorize MCP server %s with your own account: send me `/echogate mcp login %s` and I'll answer you privately with the link.", z.Tool, z.Server, z.Server)
	if privatePlatforms[conv.Platform] || conv.DM {
		start, err := m.Logins().Begin(ctx, z.Server, z.Caller.UserID)
		if err != nil {
			log.Warn("MCP per-person login could not begin", "server", z.Server, "err", err)
			return
		}
		text = fmt.Sprintf("To use %s, authorize MCP server %s with your own account (this link works once, for %s, and only for you): %s", z.Tool, z.Server, mcp.LoginTTL, start.URL)
	}
	out := echogate.Outbound{Kind: echogate.OutNotice, Conversation: conv, Text: text, Session: z.Caller.Session, PrivateTo: bare}
	if _, err := rep.Send(ctx, out); err != nil {
		log.Warn("MCP per-person login link not sent", "server", z.Server, "err", err)
	}
}
