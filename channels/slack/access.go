package slack

import "github.com/echogate/echogate"

// admits reports whether the access rules (Config.Admits) let ev in; without them, everyone.
func (c *Channel) admits(ev echogate.InboundEvent) bool {
	return c.cfg.Admits == nil || c.cfg.Admits(ev)
}

// dmProbe is the event a DM of user (in the app's DM or assistant channel ch) would become: a
// person the access rules would refuse there gets no welcome, home tab or suggested prompts.
func dmProbe(team, ch, user string) echogate.InboundEvent {
	ev := probe(echogate.KindDirect, team, ch, user, "")
	ev.Conversation.DM = true
	return ev
}

// probe is the event a post of user in ch would become, for asking Config.Admits before a
// read decides whether it is an event at all.
func probe(kind echogate.EventKind, team, ch, user, userTeam string) echogate.InboundEvent {
	return echogate.InboundEvent{Kind: kind, Actor: echogate.Actor{ID: user, Team: userTeam},
		Conversation: echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: team, Channel: ch, DM: isDMChannel(ch)}}
}
