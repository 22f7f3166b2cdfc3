package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/mcp"
)

// replier returns the platform's replier once the pipeline is wired (nil without one).
func (a *mcpAuthorizer) replier(platform string) pipeline.Replier {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.repliers[platform]
}

// loginDMTarget checks `mcp login --dm`'s target ("slack:U123" or "discord:123…"): a platform
// this gateway runs, and an approver (approval.approvers), since whoever opens the link logs the
// gateway in. It returns the HTTP status and what to fix when it is refused.
func (g *gateway) loginDMTarget(target string) (platform, user string, rep pipeline.Replier, code int, msg string) {
	platform, user, ok := strings.Cut(target, ":")
	if !ok || user == "" || (platform != echogate.PlatformSlack && platform != echogate.PlatformDiscord) {
		return "", "", nil, http.StatusBadRequest, fmt.Sprintf("dm %q: name the operator as slack:USERID or discord:USERID", target)
	}
	if rep = g.mcpAuth.replier(platform); rep == nil {
		return "", "", nil, http.StatusBadRequest, fmt.Sprintf("dm %q: %s is not configured on this gateway: send the link by a platform it runs", target, platform)
	}
	if !slices.Contains(g.cfg.Approval.Approvers, target) {
		return "", "", nil, http.StatusForbidden, fmt.Sprintf("dm %q: the link logs the gateway in, so it goes only to an approver; add %s to approval.approvers or name one who is", target, target)
	}
	return platform, user, rep, 0, ""
}

// sendLoginDM sends a login's authorization link to the operator in a direct message: Slack
// posts to the user's id (their DM with the app), Discord opens a DM (an Outbound with PrivateTo
// and no channel).
func sendLoginDM(ctx context.Context, rep pipeline.Replier, platform, user, server string, start mcp.LoginStart) error {
	text := fmt.Sprintf("🔑 Log the gateway in to MCP server %s: open this link and approve the access (it works once, until %s UTC; do not forward it): %s",
		server, start.Expires.UTC().Format("15:04"), start.URL)
	out := echogate.Outbound{Kind: echogate.OutNotice, Text: text, Conversation: echogate.ConversationRef{Platform: platform, DM: true}}
	if platform == echogate.PlatformSlack {
		out.Conversation.Channel = user
	} else {
		out.PrivateTo = user
	}
	if _, err := rep.Send(ctx, out); err != nil {
		return fmt.Errorf("send the link to %s:%s: %w", platform, user, err)
	}
	return nil
}
