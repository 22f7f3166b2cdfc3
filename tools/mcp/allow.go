package mcp

import "strings"

// allowList is a server's channel and user restriction.
type allowList struct {
	channels  map[string]bool // "platform:channel"
	platforms map[string]bool // "platform" from "platform:*"
	users     map[string]bool // "platform:user"
}

func newAllowList(channels, users []string) allowList {
	a := allowList{}
	if len(channels) > 0 {
		a.channels, a.platforms = map[string]bool{}, map[string]bool{}
		for _, c := range channels {
			c = strings.TrimSpace(c)
			if p, id, _ := strings.Cut(c, ":"); id == "*" {
				a.platforms[p] = true
			} else {
				a.channels[c] = true
			}
		}
	}
	if len(users) > 0 {
		a.users = map[string]bool{}
		for _, u := range users {
			a.users[strings.TrimSpace(u)] = true
		}
	}
	return a
}

func (a allowList) allows(channel, userID string) bool {
	if a.channels != nil {
		p, _, _ := strings.Cut(channel, ":")
		if !a.channels[channel] && !a.platforms[p] {
			return false
		}
	}
	if a.users != nil && !a.users[userID] {
		return false
	}
	return true
}

// Allowed reports whether a conversation may use the tools of the named server. channel is
// "platform:channel" (e.g. "slack:C0123"), userID the qualified user id ("slack:U0123"), the
// forms the pipeline uses. A server without allow lists allows everyone; an unknown server is
// not allowed.
func (m *Manager) Allowed(server, channel, userID string) bool {
	s, ok := m.byName[server]
	if !ok {
		return false
	}
	return s.allow.allows(channel, userID)
}

// ToolFilter returns the function the pipeline filters a turn's tool catalogue with (and should
// check again before executing a call, since a model may name a tool it saw in an earlier turn):
// it reports whether the tool toolName may be offered to, and run for, userID in channel (the
// forms of Allowed). Tools that are not MCP tools of a configured server ("current_time",
// "other__thing" of no configured server) are always allowed: the filter only restricts what
// this Manager registers.
func (m *Manager) ToolFilter() func(toolName, channel, userID string) bool {
	return func(toolName, channel, userID string) bool {
		server, _, ok := strings.Cut(toolName, "__")
		if !ok {
			return true
		}
		s, ok := m.byName[server]
		if !ok {
			return true
		}
		return s.allow.allows(channel, userID)
	}
}
