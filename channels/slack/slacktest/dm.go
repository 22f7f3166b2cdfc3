package slacktest

import (
	"slices"
	"strings"
)

// openDMLocked answers conversations.open for one user, as Slack does for a bot: the same DM
// channel every time ("D" and the rest of the member id), user_not_found for what is not a
// member id (U… or W…), missing_scope when Options.Scopes lacks im:write. Called with s.mu held.
func (s *Server) openDMLocked(p map[string]string) (int, map[string]any) {
	if s.opts.Scopes != nil && !slices.Contains(s.opts.Scopes, "im:write") {
		return 200, map[string]any{"ok": false, "error": "missing_scope", "needed": "im:write,mpim:write,channels:manage,groups:write"}
	}
	users := p["users"]
	if users == "" {
		return fail("users_list_not_supplied")
	}
	if strings.Contains(users, ",") {
		return fail("not_implemented") // group DMs: the fake opens one-to-one DMs only
	}
	if len(users) < 2 || (users[0] != 'U' && users[0] != 'W') {
		return fail("user_not_found")
	}
	return 200, map[string]any{"ok": true, "channel": map[string]any{"id": DMChannel(users), "is_im": true, "user": users}}
}

// DMChannel is the DM channel the fake opens for the bot and user (conversations.open).
func DMChannel(user string) string { return "D" + strings.TrimLeft(user, "UW") }
