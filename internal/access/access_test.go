package access_test

import (
	"slices"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/access"
)

func TestPlaces(t *testing.T) {
	for name, tt := range map[string]struct {
		c    echogate.ConversationRef
		want []string
	}{
		"slack channel":    {echogate.ConversationRef{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"}, []string{"slack:C1", "slack:team:T1"}},
		"slack dm":         {echogate.ConversationRef{Platform: "slack", Workspace: "T1", Channel: "D1", DM: true}, []string{"slack:D1", "slack:dm", "slack:team:T1"}},
		"discord guild":    {echogate.ConversationRef{Platform: "discord", Workspace: "111", Channel: "8910"}, []string{"discord:8910", "discord:guild:111"}},
		"discord dm":       {echogate.ConversationRef{Platform: "discord", Channel: "42", DM: true}, []string{"discord:42", "discord:dm"}},
		"web":              {echogate.ConversationRef{Platform: "web", Channel: "s1", DM: true}, []string{"web"}},
		"console":          {echogate.ConversationRef{Platform: "console", Channel: "c", DM: true}, []string{"console"}},
		"slack no channel": {echogate.ConversationRef{Platform: "slack"}, []string{}},
	} {
		if got := access.Places(tt.c); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Places(%+v) = %q, want %q", name, tt.c, got, tt.want)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"current_time", "current_time", true},
		{"current_time", "current_timer", false},
		{"pager__*", "pager__page", true},
		{"pager__*", "pager_page", false},
		{"*", "anything", true},
		{"slack:*", "slack:C123", true},
		{"slack:*", "discord:1", false},
		{"discord:guild:*", "discord:guild:111", true},
		{"http_?etch", "http_fetch", true},
		{"[", "[", true}, // malformed: only itself
		{"[", "x", false},
	} {
		if got := access.Glob(tt.pattern, tt.name); got != tt.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	slackChan := func(user, ch string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindMention, Actor: echogate.Actor{ID: user},
			Conversation: echogate.ConversationRef{Platform: "slack", Workspace: "T1", Channel: ch}}
	}
	slackDM := func(user string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindDirect, Actor: echogate.Actor{ID: user},
			Conversation: echogate.ConversationRef{Platform: "slack", Workspace: "T1", Channel: "D9", DM: true}}
	}
	discordDM := func(user string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindDirect, Actor: echogate.Actor{ID: user},
			Conversation: echogate.ConversationRef{Platform: "discord", Channel: "77", DM: true}}
	}
	discordGuild := func(user, guild, ch string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindMention, Actor: echogate.Actor{ID: user},
			Conversation: echogate.ConversationRef{Platform: "discord", Workspace: guild, Channel: ch}}
	}
	web := echogate.InboundEvent{Kind: echogate.KindDirect, Actor: echogate.Actor{ID: "anyone"},
		Conversation: echogate.ConversationRef{Platform: "web", Channel: "s", DM: true}}
	open := access.Rules{DMs: true}
	users := access.Rules{DMs: true, Users: []string{"slack:U1", "discord:4567"}}
	channels := access.Rules{DMs: true, Channels: []string{"slack:C1", "discord:guild:111"}}
	noDMs := access.Rules{DMs: false}
	teams := access.Rules{DMs: true, Workspaces: []string{"slack:T1", "discord:111"}}
	guest := func(team string) echogate.InboundEvent {
		ev := slackChan("U7", "C9")
		ev.Actor.Team = team
		return ev
	}
	self := slackChan("UBOT", "C9")
	self.Actor.IsSelf = true

	for name, tt := range map[string]struct {
		r    access.Rules
		ev   echogate.InboundEvent
		want access.Reason
	}{
		"open: anyone":                              {open, slackChan("U9", "C9"), access.Allowed},
		"users: listed slack user":                  {users, slackChan("U1", "C9"), access.Allowed},
		"users: stranger in a channel":              {users, slackChan("U9", "C9"), access.NotUser},
		"users: stranger's DM":                      {users, slackDM("U9"), access.NotUser},
		"users: listed discord user's DM":           {users, discordDM("4567"), access.Allowed},
		"users: same id on the other platform":      {users, discordDM("U1"), access.NotUser},
		"channels: listed channel":                  {channels, slackChan("U9", "C1"), access.Allowed},
		"channels: other channel":                   {channels, slackChan("U9", "C2"), access.NotPlace},
		"channels: guild entry covers its channels": {channels, discordGuild("1", "111", "8910"), access.Allowed},
		"channels: other guild":                     {channels, discordGuild("1", "222", "8910"), access.NotPlace},
		"channels: DMs are not channels":            {channels, slackDM("U9"), access.Allowed},
		"dms off: DM refused":                       {noDMs, discordDM("4567"), access.DMsClosed},
		"dms off: channel allowed":                  {noDMs, slackChan("U9", "C9"), access.Allowed},
		"workspaces: listed team":                   {teams, slackChan("U9", "C9"), access.Allowed},
		"workspaces: listed team DM":                {teams, slackDM("U9"), access.Allowed},
		"workspaces: listed guild":                  {teams, discordGuild("1", "111", "8"), access.Allowed},
		"workspaces: other guild":                   {teams, discordGuild("1", "222", "8"), access.NotTeam},
		"workspaces: discord DM has no guild":       {teams, discordDM("1"), access.Allowed},
		"workspaces: Slack Connect guest's team":    {teams, guest("T2"), access.NotTeam},
		"workspaces: member naming their own team":  {teams, guest("T1"), access.Allowed},
		"open: Slack Connect guest":                 {open, guest("T2"), access.Allowed},
		"workspaces: guest's team listed too":       {access.Rules{DMs: true, Workspaces: []string{"slack:T1", "slack:T2"}}, guest("T2"), access.Allowed},
		"web is never checked":                      {users, web, access.Allowed},
		"the gateway's own events":                  {users, self, access.Allowed},
		"channel before person":                     {access.Rules{DMs: true, Users: []string{"slack:U1"}, Channels: []string{"slack:C1"}}, slackChan("U9", "C2"), access.NotPlace},
	} {
		if got := tt.r.Check(tt.ev); got != tt.want {
			t.Errorf("%s: Check = %q, want %q", name, got, tt.want)
		}
	}
	if !access.NotUser.Personal() || !access.DMsClosed.Personal() || access.NotPlace.Personal() || access.NotTeam.Personal() {
		t.Error("Personal: only user and dm refusals are personal")
	}
}

// BenchmarkCheck is the cost the access rules add to every Submit.
func BenchmarkCheck(b *testing.B) {
	r := access.Rules{DMs: true, Users: []string{"slack:U1", "slack:U2", "discord:4567", "slack:U3*"},
		Channels: []string{"slack:C1", "slack:C2", "discord:guild:111"}}
	ev := echogate.InboundEvent{Kind: echogate.KindMention, Actor: echogate.Actor{ID: "U3X"},
		Conversation: echogate.ConversationRef{Platform: "slack", Workspace: "T1", Channel: "C2", Thread: "1.2"}}
	b.ReportAllocs()
	for b.Loop() {
		if r.Check(ev) != access.Allowed {
			b.Fatal("refused")
		}
	}
}

// BenchmarkCheckOpen is the cost without access: lists (the default).
func BenchmarkCheckOpen(b *testing.B) {
	r := access.Rules{DMs: true}
	ev := echogate.InboundEvent{Kind: echogate.KindMention, Actor: echogate.Actor{ID: "U3X"},
		Conversation: echogate.ConversationRef{Platform: "slack", Workspace: "T1", Channel: "C2"}}
	b.ReportAllocs()
	for b.Loop() {
		if r.Check(ev) != access.Allowed {
			b.Fatal("refused")
		}
	}
}

// FuzzGlob: any pattern against any platform-supplied name neither panics nor disagrees with
// itself on a literal pattern.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"slack:*", "slack:C1"}, {"pager__*", "pager__page"}, {"[", "["}, {"a?c", "abc"}, {"*\\", "x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := access.Glob(pattern, name)
		if pattern == name && !got {
			t.Errorf("Glob(%q, itself) = false", pattern)
		}
		_ = access.Places(echogate.ConversationRef{Platform: "slack", Channel: name, Workspace: pattern})
	})
}
