package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/access"
)

// Refusal is one event the access rules turned away, as the console lists it.
type Refusal struct {
	At      time.Time `json:"at"`
	Place   string    `json:"place"` // the conversation's most specific place name
	UserID  string    `json:"user_id"`
	Reason  string    `json:"reason"`  // user | channel | workspace | dm
	Replied bool      `json:"replied"` // access.refusal was sent
}

const (
	// refusalEvery is how often one user may be sent access.refusal, so the text cannot be
	// used to make the bot spam a channel.
	refusalEvery = time.Hour
	// maxRefusalMarks bounds the users remembered for refusalEvery; past it expired marks are
	// swept, and if none expired no further refusal text is sent until some do.
	maxRefusalMarks = 10000
	// recentRefusals is how many refusals the console can list.
	recentRefusals = 100
	// refusalSendTimeout bounds the post of a refusal text (Submit must return quickly).
	refusalSendTimeout = 5 * time.Second
)

// gate applies the access rules in Submit, before an event is recorded or queued.
type gate struct {
	mu     sync.Mutex
	rules  access.Rules
	marks  map[string]time.Time // user → when the refusal text was last sent
	recent []Refusal            // ring of the latest refusals, oldest first
}

// SetAccess replaces the access rules (start-up and configuration reloads). The next event
// is checked against them.
func (p *Pipeline) SetAccess(r access.Rules) {
	p.gate.mu.Lock()
	p.gate.rules = r
	p.gate.mu.Unlock()
}

// Refusals returns the latest refusals, newest first.
func (p *Pipeline) Refusals() []Refusal {
	p.gate.mu.Lock()
	defer p.gate.mu.Unlock()
	out := make([]Refusal, 0, len(p.gate.recent))
	for i := len(p.gate.recent) - 1; i >= 0; i-- {
		out = append(out, p.gate.recent[i])
	}
	return out
}

// Admits reports whether the access rules let ev in. It has no side effects (no log, no
// metric, no refusal text): adapters call it, wired by cmd, to spend no platform reads
// (thread history, name look-ups) on an event Submit will refuse. Submit still decides and
// records the refusal; this is the same rule, read under the same lock.
func (p *Pipeline) Admits(ev echogate.InboundEvent) bool {
	p.gate.mu.Lock()
	rules := p.gate.rules
	p.gate.mu.Unlock()
	return rules.Check(ev) == access.Allowed
}

// refused checks ev against the access rules. A refused event is dropped: no turn, no model
// call, no transcript, only an audit log line, the refusal metric and the console's list; a
// personal refusal (see access.Reason.Personal) is answered with access.refusal at most once
// per user per refusalEvery. It reports whether ev was refused. An admitted event's thread
// context loses the messages of authors the rules refuse (withholdRefused), before the event
// is recorded.
func (p *Pipeline) refused(ctx context.Context, ev *echogate.InboundEvent) bool {
	if ev.Scheduled != nil && ev.Scheduled.Config {
		return false // the operator's own job (scheduled.go)
	}
	p.gate.mu.Lock()
	rules := p.gate.rules
	reason := rules.Check(*ev)
	if reason == access.Allowed {
		p.gate.mu.Unlock()
		withholdRefused(rules, ev)
		return false
	}
	c := ev.Conversation
	user := ev.Actor.QualifiedID(c.Platform)
	now := p.cfg.Now()
	reply := rules.Refusal != "" && reason.Personal() && ev.Kind != echogate.KindReaction && p.markRefusalLocked(user, now)
	place := c.Platform
	if ps := access.Places(c); len(ps) > 0 {
		place = ps[0]
	}
	rec := Refusal{At: now, Place: place, UserID: user, Reason: string(reason), Replied: reply}
	if len(p.gate.recent) == recentRefusals {
		p.gate.recent = append(p.gate.recent[:0], p.gate.recent[1:]...)
	}
	p.gate.recent = append(p.gate.recent, rec)
	p.gate.mu.Unlock()

	p.d.Metrics.AccessRefused(c.Platform, string(reason))
	p.log.Info("access refused", "event_id", ev.ID, "channel", c.Platform, "place", place, "user", user,
		"reason", string(reason), "replied", reply)
	if reply {
		if rep := p.d.Repliers[c.Platform]; rep != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refusalSendTimeout)
			defer cancel()
			out := echogate.Outbound{Kind: echogate.OutNotice, Conversation: c, ReplyTo: ev.Message, Text: rules.Refusal}
			if _, err := rep.Send(sctx, out); err != nil {
				p.log.Warn("pipeline: post access refusal", "channel", c.Platform, "user", user, "err", err)
			}
		}
	}
	return true
}

// markRefusalLocked reports whether user may be sent the refusal text now, and records it.
// p.gate.mu must be held.
func (p *Pipeline) markRefusalLocked(user string, now time.Time) bool {
	g := &p.gate
	if g.marks == nil {
		g.marks = map[string]time.Time{}
	}
	if last, ok := g.marks[user]; ok && now.Sub(last) < refusalEvery && !now.Before(last) {
		return false
	}
	if len(g.marks) >= maxRefusalMarks {
		for u, at := range g.marks {
			if now.Sub(at) >= refusalEvery || now.Before(at) {
				delete(g.marks, u)
			}
		}
		if len(g.marks) >= maxRefusalMarks {
			return false
		}
	}
	g.marks[user] = now
	return true
}

// withholdRefused clears the thread-context messages whose authors the rules refuse (as if
// they had sent the event themselves, in the same conversation) and marks them Withheld, so
// what they wrote never reaches the model or the store; only their number is shown. The
// slice is copied first: the adapter's value is not changed under it.
func withholdRefused(rules access.Rules, ev *echogate.InboundEvent) {
	if len(ev.ThreadContext) == 0 || rules.Open() {
		return
	}
	var out []echogate.ThreadMessage
	for i, m := range ev.ThreadContext {
		if m.Withheld || authorAdmitted(rules, ev.Conversation, m) {
			continue
		}
		if out == nil {
			out = append([]echogate.ThreadMessage(nil), ev.ThreadContext...)
		}
		out[i] = echogate.ThreadMessage{Withheld: true}
	}
	if out != nil {
		ev.ThreadContext = out
	}
}

// authorAdmitted reports whether the rules would let the author of m in where m was written.
func authorAdmitted(rules access.Rules, c echogate.ConversationRef, m echogate.ThreadMessage) bool {
	as := echogate.InboundEvent{Kind: echogate.KindMention, Conversation: c,
		Actor: echogate.Actor{ID: m.AuthorID, Name: m.Author, IsBot: m.IsBot, Team: m.AuthorTeam}}
	return rules.Check(as) == access.Allowed
}
