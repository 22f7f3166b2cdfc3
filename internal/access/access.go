// Package access holds the pure matching behind `access:` (who may use the gateway) and
// `agents:` (which profile serves a place): the place names of a conversation, glob patterns
// over them and over tool names, and the allow-list check. It does no I/O and keeps no state;
// cmd builds the rules from config and the pipeline applies them.
package access

import (
	"path"
	"strings"

	"github.com/echogate/echogate"
)

// Place names (the `match:` and `access.channels` vocabulary):
//
//	slack:<channel>      a Slack channel (C…, G…) or DM (D…) id
//	slack:dm             any Slack DM
//	slack:team:<T…>      any conversation in that Slack workspace
//	discord:<channel>    a Discord channel or thread id (threads are channels of their own)
//	discord:dm           any Discord DM
//	discord:guild:<id>   any channel of that Discord server
//	web, console         the web chat and the terminal
const (
	DM    = "dm"
	Team  = "team:"
	Guild = "guild:"
)

// Places returns the place names of a conversation, most specific first. Every name is
// prefixed with the platform, except web and console, which are one place each.
func Places(c echogate.ConversationRef) []string {
	p := c.Platform
	switch p {
	case echogate.PlatformWeb, echogate.PlatformConsole, "":
		return []string{p}
	}
	out := make([]string, 0, 3)
	if c.Channel != "" {
		out = append(out, p+":"+c.Channel)
	}
	if c.DM {
		out = append(out, p+":"+DM)
	}
	if c.Workspace != "" {
		switch p {
		case echogate.PlatformSlack:
			out = append(out, p+":"+Team+c.Workspace)
		case echogate.PlatformDiscord:
			out = append(out, p+":"+Guild+c.Workspace)
		}
	}
	return out
}

// Glob reports whether name matches pattern: `*` matches any run of characters (including
// none), `?` one character; everything else matches itself. A malformed pattern matches only
// itself.
func Glob(pattern, name string) bool {
	if !strings.ContainsAny(pattern, "*?[") {
		return pattern == name
	}
	// path.Match stops `*` at "/"; names here have none that matter, so map them away.
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(name, "/", "\x00"))
	return err == nil && ok || pattern == name
}

// ValidGlob reports whether pattern is well formed (for config validation).
func ValidGlob(pattern string) bool {
	_, err := path.Match(pattern, "")
	return err == nil
}

// AnyGlob reports whether any of patterns matches any of names.
func AnyGlob(patterns, names []string) bool {
	for _, pat := range patterns {
		for _, n := range names {
			if Glob(pat, n) {
				return true
			}
		}
	}
	return false
}

// Reason says why an event was refused; "" means allowed.
type Reason string

const (
	Allowed   Reason = ""
	NotUser   Reason = "user"      // the author is not in access.users
	NotPlace  Reason = "channel"   // the channel is not in access.channels
	NotTeam   Reason = "workspace" // the Slack workspace / Discord server is not in access.workspaces
	DMsClosed Reason = "dm"        // access.dms is false
)

// Personal reports whether the refusal concerns the person rather than the place: only those
// may be answered with access.refusal (a channel the bot does not serve gets silence).
func (r Reason) Personal() bool { return r == NotUser || r == DMsClosed }

// Rules are the `access:` allow-lists. Empty lists allow everyone. They apply to the chat
// platforms (Slack, Discord); the web chat and the terminal are operator surfaces guarded by
// http.auth_token and are not checked.
type Rules struct {
	Users      []string // qualified user ids or globs: slack:U123, discord:4567, slack:*
	Channels   []string // place names or globs (see Places); apply to everything but DMs
	Workspaces []string // slack:T…, discord:<guild id>; a Discord DM has no server and is not checked; the person's own team (Actor.Team) is checked too
	DMs        bool     // DMs (from allowed users) are answered
	Refusal    string   // text sent once per user per hour on a personal refusal; "" = silence
}

// Open reports whether the rules let everything through.
func (r Rules) Open() bool {
	return len(r.Users) == 0 && len(r.Channels) == 0 && len(r.Workspaces) == 0 && r.DMs
}

// Check decides whether ev may start or join a turn. Events of the gateway itself, the web
// chat and the terminal are always allowed. Places are checked before people, so a channel
// the bot does not serve stays silent whoever writes there.
func (r Rules) Check(ev echogate.InboundEvent) Reason {
	c := ev.Conversation
	if ev.Actor.IsSelf || (c.Platform != echogate.PlatformSlack && c.Platform != echogate.PlatformDiscord) {
		return Allowed
	}
	if len(r.Workspaces) > 0 && c.Workspace != "" && !AnyGlob(r.Workspaces, []string{c.Platform + ":" + c.Workspace}) {
		return NotTeam
	}
	if len(r.Workspaces) > 0 && c.Workspace == "" && !c.DM {
		return NotTeam
	}
	if c.DM && !r.DMs {
		return DMsClosed
	}
	if !c.DM && len(r.Channels) > 0 && !AnyGlob(r.Channels, Places(c)) {
		return NotPlace
	}
	// A Slack Connect guest writes in a channel of the installing workspace from their own
	// organisation: the allow-list is checked against the person's team too.
	if t := ev.Actor.Team; len(r.Workspaces) > 0 && t != "" && t != c.Workspace && !AnyGlob(r.Workspaces, []string{c.Platform + ":" + t}) {
		return NotTeam
	}
	if len(r.Users) > 0 && !AnyGlob(r.Users, []string{ev.Actor.QualifiedID(c.Platform)}) {
		return NotUser
	}
	return Allowed
}
