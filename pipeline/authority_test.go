package pipeline

import (
	"testing"

	"github.com/echogate/echogate"
)

func TestPausedAuthority(t *testing.T) {
	approvers := map[string]bool{"slack:UADMIN": true}
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C1", Thread: "1.0"}
	msg := func(user, text string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindMessage, Conversation: conv, Actor: echogate.Actor{ID: user}, Text: text}
	}
	react := func(user, emoji string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindReaction, Conversation: conv, Actor: echogate.Actor{ID: user}, Reaction: emoji}
	}
	mention := msg("U999", "<@bot> what time is it?")
	mention.Kind = echogate.KindMention
	file := msg("U999", "")
	file.Attachments = []echogate.Attachment{{Name: "a.txt"}}
	bot := msg("B1", "hello from another bot")
	bot.Actor.IsBot = true
	self := echogate.InboundEvent{ID: timeoutPrefix + "t1", Conversation: conv, Actor: echogate.Actor{ID: "BOT", IsSelf: true}}
	sameIDOtherPlatform := msg("U123", "stop")
	sameIDOtherPlatform.Conversation.Platform = echogate.PlatformDiscord

	for name, tt := range map[string]struct {
		ev   echogate.InboundEvent
		want pausedRight
	}{
		"requester approves by reaction":   {react("U123", echogate.ReactionApprove), rightDecide},
		"requester stops":                  {msg("U123", "stop"), rightDecide},
		"requester's new message":          {msg("U123", "never mind, do this instead"), rightDecide},
		"approver denies by text":          {msg("UADMIN", "deny"), rightDecide},
		"approver stops by reaction":       {react("UADMIN", echogate.ReactionStop), rightDecide},
		"gateway timeout":                  {self, rightDecide},
		"stranger approves by reaction":    {react("U999", echogate.ReactionApprove), rightIgnore},
		"stranger stops by reaction":       {react("U999", echogate.ReactionStop), rightIgnore},
		"stranger types stop":              {msg("U999", "stop"), rightIgnore},
		"stranger types STOP":              {msg("U999", " STOP "), rightIgnore},
		"stranger types approve":           {msg("U999", "approve"), rightIgnore},
		"stranger types approve session":   {msg("U999", "approve session"), rightIgnore},
		"stranger types deny":              {msg("U999", "Deny"), rightIgnore},
		"stranger's new message":           {msg("U999", "what is the weather?"), rightOwnTurn},
		"stranger's mention":               {mention, rightOwnTurn},
		"stranger's file":                  {file, rightOwnTurn},
		"stranger's empty message":         {msg("U999", "  "), rightIgnore},
		"another bot":                      {bot, rightIgnore},
		"actor without an id":              {msg("", "stop"), rightIgnore},
		"requester's id on other platform": {sameIDOtherPlatform, rightIgnore},
	} {
		if got := pausedAuthority(tt.ev, "slack:U123", approvers); got != tt.want {
			t.Errorf("%s: pausedAuthority = %d, want %d", name, got, tt.want)
		}
	}
}

func TestMayStop(t *testing.T) {
	p := &Pipeline{approvers: map[string]bool{"slack:UADMIN": true}}
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C1"}
	stop := func(user string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindMessage, Conversation: conv, Actor: echogate.Actor{ID: user}, Text: "stop"}
	}
	ctl := &turnCtl{}
	if p.mayStop(ctl, stop("U123")) {
		t.Errorf("mayStop(no turn running yet) = true, want false (the stop waits its turn)")
	}
	ctl.setOwner("slack:U123")
	for user, want := range map[string]bool{"U123": true, "UADMIN": true, "U999": false} {
		if got := p.mayStop(ctl, stop(user)); got != want {
			t.Errorf("mayStop(turn of slack:U123, stop from %s) = %v, want %v", user, got, want)
		}
	}
}
