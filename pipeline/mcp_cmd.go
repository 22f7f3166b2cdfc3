package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

// cmdMCP shows and manages the sender's own logins to MCP servers with auth: oauth_per_user
// (`/echogate mcp`, `!mcp`, `/mcp`): `mcp` lists them, `mcp login NAME` sends the sender a
// private authorization link, `mcp revoke NAME` forgets their grant.
const cmdMCP = "mcp"

// MCPGrants is what the mcp command uses: a person's grants on MCP servers that log in per
// person. user is a qualified id ("slack:U0123"); grants never cross users.
type MCPGrants interface {
	// Grants lists user's grants, and the servers they may log in to (sorted).
	Grants(ctx context.Context, user string) (grants []MCPGrant, servers []string, err error)
	// Login begins user's login to server and returns the URL to open.
	Login(ctx context.Context, server, user string) (url string, err error)
	// Revoke deletes user's grant on server.
	Revoke(ctx context.Context, server, user string) error
}

// MCPGrant is one of a person's grants, without its tokens.
type MCPGrant struct {
	Server    string
	ExpiresAt time.Time // the access token's; zero: unknown (it is refreshed when it runs out)
}

// mcpCommand answers the sender alone.
func (p *Pipeline) mcpCommand(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, arg string) {
	text := "No MCP server on this gateway logs in with your own account."
	if p.d.MCPGrants != nil {
		text = mcpAnswer(ctx, log, p.d.MCPGrants, ev.Actor.QualifiedID(ev.Conversation.Platform), arg)
	}
	p.answerPrivately(ctx, log, ev, text)
}

func mcpAnswer(ctx context.Context, log *slog.Logger, g MCPGrants, user, arg string) string {
	verb, server, _ := strings.Cut(arg, " ")
	server = strings.TrimSpace(server)
	switch strings.ToLower(verb) {
	case "":
		grants, servers, err := g.Grants(ctx, user)
		if err != nil {
			log.Error("pipeline: /mcp", "err", err)
			return "I couldn't read your MCP logins just now; try again in a moment."
		}
		if len(servers) == 0 {
			return "No MCP server on this gateway logs in with your own account."
		}
		var b strings.Builder
		if len(grants) == 0 {
			b.WriteString("You have not authorized any MCP server.\n")
		} else {
			b.WriteString("Your MCP logins:\n")
			for _, gr := range grants {
				fmt.Fprintf(&b, "• %s\n", gr.Server)
			}
		}
		fmt.Fprintf(&b, "Servers you can authorize: %s. `mcp login NAME` sends you the link; `mcp revoke NAME` forgets your login.", strings.Join(servers, ", "))
		return b.String()
	case "login":
		if server == "" {
			return "Name the server: `mcp login NAME` (`mcp` lists them)."
		}
		u, err := g.Login(ctx, server, user)
		if err != nil {
			return fmt.Sprintf("I couldn't start the login to %s: %v", server, err)
		}
		return fmt.Sprintf("Open this link to authorize %s with your own account (it works once, for 10 minutes): %s", server, u)
	case "revoke":
		if server == "" {
			return "Name the server: `mcp revoke NAME` (`mcp` lists your logins)."
		}
		if err := g.Revoke(ctx, server, user); err != nil {
			return fmt.Sprintf("I couldn't revoke your login to %s: %v", server, err)
		}
		return fmt.Sprintf("Your login to %s is forgotten; its tools will ask you to authorize again.", server)
	}
	return "Use `mcp` (your logins), `mcp login NAME` or `mcp revoke NAME`."
}
