package slack

import "sort"

// MethodScopes maps each Web API method the channel calls to the bot scope it needs ("" for
// none). docs/slack-app-manifest.yaml requests exactly the scopes of these methods, of the
// subscribed events (EventScopes) and of the slash command; a test keeps the three in step with
// the code.
var MethodScopes = map[string]string{
	"auth.test":                             "",
	"apps.connections.open":                 "", // app-level token, connections:write
	"chat.postMessage":                      "chat:write",
	"chat.update":                           "chat:write",
	"chat.delete":                           "chat:write",
	"chat.postEphemeral":                    "chat:write",
	"chat.startStream":                      "chat:write",
	"chat.appendStream":                     "chat:write",
	"chat.stopStream":                       "chat:write",
	"reactions.add":                         "reactions:write",
	"reactions.remove":                      "reactions:write",
	"conversations.replies":                 "channels:history", // groups:history / im:history in private channels and DMs
	"conversations.history":                 "channels:history",
	"users.info":                            "users:read",
	"conversations.open":                    "im:write",   // a scheduled job's delivery to slack:dm:<user> (dm.go)
	"assistant.threads.setStatus":           "chat:write", // since 2026-03 also in channels; assistant:write is being retired for it
	"assistant.threads.setSuggestedPrompts": "assistant:write",
	"assistant.threads.setTitle":            "assistant:write",
	"agents.sessions.setStatus":             "chat:write", // thread-based agent sessions; the app must be declared an agent (which adds assistant:write)
	"views.publish":                         "",           // the Home tab (apphome.go)
	"files (url_private download)":          "files:read",
}

// EventScopes maps each subscribed bot event to the scope Slack requires for it.
var EventScopes = map[string]string{
	"app_mention":              "app_mentions:read",
	"message.im":               "im:history",
	"message.channels":         "channels:history",
	"message.groups":           "groups:history",
	"reaction_added":           "reactions:read",
	"app_home_opened":          "",
	"assistant_thread_started": "assistant:write",
	"agent_session_stopped":    "", // Slack's native stop button in agent threads
}

// ScopeFeature names what each bot scope is for, as doctor reports a missing one.
var ScopeFeature = map[string]string{
	"app_mentions:read": "answering @-mentions",
	"chat:write":        "posting, streaming and editing replies",
	"channels:history":  "thread follow-ups and thread context in public channels",
	"groups:history":    "the same in private channels",
	"im:history":        "direct messages",
	"im:write":          "scheduled jobs delivered to a user's DM (slack:dm:<user>)",
	"reactions:read":    "approving (✅ 🔁 ❌) and stopping (🛑) with reactions",
	"reactions:write":   "the approval reactions and the 👀 progress reaction",
	"users:read":        "display names in thread context and the console",
	"files:read":        "reading attached files",
	"assistant:write":   "thread status, suggested prompts (agent messaging experience)",
	"commands":          "the /echogate slash command",
}

// RequiredScopes is the sorted set of bot scopes the channel uses.
func RequiredScopes() []string {
	set := map[string]bool{"commands": true}
	for _, s := range MethodScopes {
		set[s] = true
	}
	for _, s := range EventScopes {
		set[s] = true
	}
	delete(set, "")
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
