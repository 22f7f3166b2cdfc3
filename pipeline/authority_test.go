package pipeline

import (
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

// TestAuthority is the rule itself, action by action, over the people of a shared
// conversation: UA started it, UR's turn runs (or waits for approval), UB only takes part,
// UADMIN is an approver. TestWhoMayDoWhat (shared_table_test.go) drives the same through
// the dispatcher's real paths.
func TestAuthority(t *testing.T) {
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C1", Thread: "1.0"}
	ev := func(user string) *echogate.InboundEvent {
		return &echogate.InboundEvent{Kind: echogate.KindMessage, Conversation: conv, Actor: echogate.Actor{ID: user}}
	}
	base := parties{starter: "slack:UA", requester: "slack:UR", approvers: map[string]bool{"slack:UADMIN": true}}
	with := func(f func(*parties)) parties {
		w := base
		f(&w)
		return w
	}
	dm := with(func(w *parties) { w.starter, w.requester, w.dm = "", "", true })
	destructive := with(func(w *parties) { w.needsApprover = true })
	pinned := with(func(w *parties) { w.pinned = true })
	self := ev("BOT")
	self.Actor.IsSelf = true
	bot := ev("B1")
	bot.Actor.IsBot = true
	otherPlatform := ev("UA")
	otherPlatform.Conversation.Platform = echogate.PlatformDiscord

	all := []action{actMessage, actModelShow, actStop, actInterrupt, actNew, actModelSet, actApprove, actDeny, actSupersede, actAnswer}
	// want lists, per action in the order of all, "y" or "n".
	for name, tt := range map[string]struct {
		ev   *echogate.InboundEvent
		who  parties
		want string
	}{
		"starter":                          {ev("UA"), base, "y y y y y y n n n n"},
		"requester":                        {ev("UR"), base, "y y y y y y y y y y"},
		"other participant":                {ev("UB"), base, "y y n n n n n n n n"},
		"approver":                         {ev("UADMIN"), base, "y y y y y y y y y y"},
		"the DM's person":                  {ev("UB"), dm, "y y y y y y n n n n"},
		"requester, destructive call":      {ev("UR"), destructive, "y y y y y y n y y y"},
		"approver, destructive call":       {ev("UADMIN"), destructive, "y y y y y y y y y y"},
		"starter, pinned model":            {ev("UA"), pinned, "y y y y y n n n n n"},
		"approver, pinned model":           {ev("UADMIN"), pinned, "y y y y y y y y y y"},
		"the gateway":                      {self, destructive, "y y y y y y y y y y"},
		"another bot":                      {bot, base, "n n n n n n n n n n"},
		"actor without an id":              {ev(""), base, "n n n n n n n n n n"},
		"starter's id on another platform": {otherPlatform, base, "y y n n n n n n n n"},
	} {
		want := strings.Fields(tt.want)
		for i, a := range all {
			if got := authority(tt.ev, a, tt.who); got != (want[i] == "y") {
				t.Errorf("%s: authority(action %d) = %v, want %v", name, a, got, want[i] == "y")
			}
		}
	}
}

func TestPausedAction(t *testing.T) {
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C1"}
	msg := func(text string) *echogate.InboundEvent {
		return &echogate.InboundEvent{Kind: echogate.KindMessage, Conversation: conv, Actor: echogate.Actor{ID: "U1"}, Text: text}
	}
	react := func(emoji string) *echogate.InboundEvent {
		return &echogate.InboundEvent{Kind: echogate.KindReaction, Conversation: conv, Actor: echogate.Actor{ID: "U1"}, Reaction: emoji}
	}
	for name, tt := range map[string]struct {
		ev   *echogate.InboundEvent
		kind echogate.PauseKind
		want action
		ok   bool
	}{
		"✅":                              {react(echogate.ReactionApprove), echogate.PauseApproval, actApprove, true},
		"🔁":                              {react(echogate.ReactionApproveSession), echogate.PauseApproval, actApprove, true},
		"❌":                              {react(echogate.ReactionDeny), echogate.PauseApproval, actDeny, true},
		"🛑":                              {react(echogate.ReactionStop), echogate.PauseApproval, actStop, true},
		"👍":                              {react("👍"), echogate.PauseApproval, actMessage, false},
		"✅ on a question":                {react(echogate.ReactionApprove), echogate.PauseAsk, actApprove, false},
		"approve session":                {msg(" Approve session "), echogate.PauseApproval, actApprove, true},
		"reject":                         {msg("reject"), echogate.PauseApproval, actDeny, true},
		"stop":                           {msg("STOP"), echogate.PauseApproval, actStop, true},
		"/stop":                          {msg("/stop"), echogate.PauseApproval, actStop, true},
		"a new message":                  {msg("do this instead"), echogate.PauseApproval, actSupersede, true},
		"an answer":                      {msg("Oslo"), echogate.PauseAsk, actAnswer, true},
		"approve as a question's answer": {msg("approve"), echogate.PauseAsk, actAnswer, true},
	} {
		if got, ok := pausedAction(tt.ev, tt.kind); got != tt.want || ok != tt.ok {
			t.Errorf("%s: pausedAction = %d, %v; want %d, %v", name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMayStop(t *testing.T) {
	p := &Pipeline{}
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C1"}
	stop := func(user string) echogate.InboundEvent {
		return echogate.InboundEvent{Kind: echogate.KindMessage, Conversation: conv, Actor: echogate.Actor{ID: user}, Text: "stop"}
	}
	ctl := &turnCtl{}
	if p.mayStop(ctl, stop("U123")) {
		t.Errorf("mayStop(no turn running yet) = true, want false (the stop waits its turn)")
	}
	ctl.setOwner("slack:U123", map[string]bool{"slack:UADMIN": true})
	for user, want := range map[string]bool{"U123": true, "UADMIN": true, "U999": false} {
		if got := p.mayStop(ctl, stop(user)); got != want {
			t.Errorf("mayStop(turn of slack:U123, stop from %s) = %v, want %v", user, got, want)
		}
	}
}

func TestWhoCan(t *testing.T) {
	who := parties{starter: "slack:UA", requester: "slack:UR", approvers: map[string]bool{"slack:UADMIN": true}}
	for name, tt := range map[string]struct {
		a    action
		who  parties
		want []string
	}{
		"stop":                   {actStop, who, []string{"slack:UA (who started this conversation)", "slack:UR", "slack:UADMIN", "stop it"}},
		"new, no turn":           {actNew, parties{starter: "slack:UA"}, []string{"Only slack:UA (who started this conversation) can start this conversation over."}},
		"approve destructive":    {actApprove, parties{requester: "slack:UR", approvers: who.approvers, needsApprover: true}, []string{"Only an approver (slack:UADMIN) can approve `run_command`"}},
		"no approver configured": {actApprove, parties{requester: "slack:UR", needsApprover: true}, []string{"none is configured", "`approval.approvers`"}},
		"pinned model":           {actModelSet, parties{starter: "slack:UA", pinned: true}, []string{"pinned", "only an approver"}},
	} {
		got := whoCan(tt.a, tt.who, "run_command", nil)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: whoCan = %q, want %q in it", name, got, w)
			}
		}
	}
}
