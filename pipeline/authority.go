package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// action is what an event asks to do in its conversation. A conversation (a Slack thread, a
// channel without threads, a Discord guild channel) may have many people; some actions are
// a person's own, others act on everyone's conversation.
type action uint8

const (
	actMessage   action = iota // a new message: its sender's own turn
	actModelShow               // !model: show the conversation's model
	actStop                    // stop the running or paused turn: "stop", 🛑, /echogate stop, Slack's stop button
	actInterrupt               // a new message that stops the running turn (agent.on_busy: interrupt)
	actNew                     // !new: forget the conversation
	actModelSet                // !model NAME | auto: change the conversation's model
	actApprove                 // ✅ 🔁, "approve", a button: run the pending call
	actDeny                    // ❌, "deny": refuse the pending call
	actSupersede               // a new message that denies the pending call and continues the paused turn
	actAnswer                  // the answer to the paused turn's question (ask_user)
)

// conversational reports the actions on the whole conversation: its starter may take them.
func (a action) conversational() bool {
	switch a {
	case actStop, actInterrupt, actNew, actModelSet:
		return true
	}
	return false
}

// parties are the people with a say in a conversation when an event arrives.
type parties struct {
	starter   string          // who started the conversation (SessionInfo.UserID); "" unknown
	requester string          // the running or paused turn's user; "" none
	approvers map[string]bool // approval.approvers and the serving agent's own
	dm        bool            // a DM: its one person is the conversation
	// needsApprover: the pending call is of a destructive or approvers_only tool, which the
	// requester's own approval does not decide.
	needsApprover bool
	pinned        bool // the agent pins its model: only an approver changes it
}

// authority is the one rule of who may do what in a conversation; every path (new messages,
// stops by text, reaction, slash command or Slack's button, interrupts, !new, !model, and
// approvals by reaction, button, text or slash command) asks it. People the access rules
// refuse never get here (Submit drops their events).
//
//   - A new message, and showing the model, are anyone's.
//   - Stopping or interrupting a turn, !new and changing the model act on everyone's
//     conversation: the starter, the running turn's requester or an approver may (in a DM,
//     its person). Over a model the agent pins, only an approver.
//   - Approving a pending call is its requester's or an approver's; a destructive or
//     approvers_only call's only an approver's. Denying it, answering its question or
//     superseding it with a new message is its requester's or an approver's.
//
// The gateway's own events (timeouts) may do anything; other bots and actors without an id
// nothing.
func authority(ev *echogate.InboundEvent, a action, who parties) bool {
	if ev.Actor.IsSelf {
		return true
	}
	if ev.Actor.ID == "" || ev.Actor.IsBot {
		return false
	}
	actor := ev.Actor.QualifiedID(ev.Conversation.Platform)
	approver := who.approvers[actor]
	requester := who.requester != "" && actor == who.requester
	switch a {
	case actMessage, actModelShow:
		return true
	case actApprove:
		return approver || (requester && !who.needsApprover)
	case actDeny, actSupersede, actAnswer:
		return approver || requester
	case actModelSet:
		if who.pinned {
			return approver
		}
	}
	return approver || who.dm || requester || (who.starter != "" && actor == who.starter)
}

// whoCan is the short answer to someone authority refused: who may do it.
// name names a person by qualified id (Pipeline.nameOf); nil shows the ids.
func whoCan(a action, who parties, tool string, name func(string) string) string {
	if name == nil {
		name = func(id string) string { return id }
	}
	approvers := approverList(who.approvers, name)
	switch {
	case a == actApprove && who.needsApprover:
		if approvers == "" {
			return fmt.Sprintf("`%s` needs an approver's decision and none is configured: list people under `approval.approvers`.", tool)
		}
		return fmt.Sprintf("Only an approver (%s) can approve `%s`; the requester's own approval does not count.", approvers, tool)
	case a == actModelSet && who.pinned:
		return "This agent's model is pinned by its configuration; only an approver can change it here."
	}
	var people []string
	if a.conversational() && who.starter != "" {
		people = append(people, name(who.starter)+" (who started this conversation)")
	}
	if who.requester != "" && who.requester != who.starter {
		people = append(people, name(who.requester)+" (whose request it is)")
	}
	if approvers != "" {
		people = append(people, "an approver ("+approvers+")")
	}
	verb := map[action]string{actStop: "stop it", actInterrupt: "interrupt it", actNew: "start this conversation over",
		actModelSet: "change its model", actApprove: "approve it", actDeny: "deny it", actSupersede: "replace it",
		actAnswer: "answer it"}[a]
	if len(people) == 0 {
		return "Only the person whose request it is can " + verb + "."
	}
	return "Only " + joinOr(people) + " can " + verb + "."
}

// approverList names up to three approvers, sorted.
func approverList(m map[string]bool, name func(string) string) string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, name(id))
	}
	slices.Sort(ids)
	if len(ids) > 3 {
		return strings.Join(ids[:3], ", ") + ", …"
	}
	return strings.Join(ids, ", ")
}

func joinOr(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// starterOf is who started the conversation, "" when unknown (no record, or unreadable).
func (p *Pipeline) starterOf(ctx context.Context, key echogate.SessionKey) string {
	si, err := p.d.Store.GetSession(ctx, key)
	if err != nil {
		if !errors.Is(err, echogate.ErrNotFound) {
			p.log.Warn("pipeline: read who started the conversation", "session", key, "err", err)
		}
		return ""
	}
	return si.UserID
}

// allowed asks authority, reading the conversation's starter only when it decides: for a
// conversation action that the cheaper facts refuse.
func (p *Pipeline) allowed(ctx context.Context, ev *echogate.InboundEvent, a action, who *parties) bool {
	if authority(ev, a, *who) {
		return true
	}
	if !a.conversational() || who.starter != "" || (a == actModelSet && who.pinned) {
		return false
	}
	who.starter = p.starterOf(ctx, ev.SessionKey())
	return authority(ev, a, *who)
}

// needsApprover reports whether a call of tool needs an approver's decision: a destructive
// tool, one whose spec says ApproversOnly, one configured approvers_only, or one no longer
// in the catalogue (judged as the strictest).
func (p *Pipeline) needsApprover(tool string) bool {
	if slices.Contains(p.cfg.ApproversOnly, tool) {
		return true
	}
	t, ok := p.d.Tools.Get(tool)
	if !ok {
		return true
	}
	s := t.Spec()
	return s.Safety == tools.Destructive || s.ApproversOnly
}

// approverNote ends the approval prompt of a call that needs an approver: who can approve it,
// since the requester's own ✅ or 🔁 does not.
func (p *Pipeline) approverNote(tool string, approvers map[string]bool) string {
	if !p.needsApprover(tool) {
		return ""
	}
	return "\n⚠️ " + whoCan(actApprove, parties{approvers: approvers, needsApprover: true}, tool, p.nameOf)
}
