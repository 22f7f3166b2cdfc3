package pipeline

import (
	"strings"

	"github.com/echogate/echogate"
)

// maxPersonName bounds a display name quoted in the gateway's own text.
const maxPersonName = 64

// Names looks display names up by qualified id ("slack:U123" → "ann"): internal/names'
// Directory, which the channels' events and their user lookups fill. Deps.Names may be nil.
type Names interface {
	Get(id string) (string, bool)
}

// person is how the gateway's own text (approval prompts, decisions, who-may-do-what answers)
// names someone: the display name when it is known (known, from the event at hand, or
// Deps.Names), else the qualified id. It is never a mention: nothing the gateway posts pings
// anyone (channels/slack/noping.go, Discord's allowed_mentions), and a name reads the same on
// every platform and in the console. Backticks and line breaks are dropped, so a name cannot
// open a code span or start a line of its own.
func (p *Pipeline) person(id, known string) string {
	name := known
	if strings.TrimSpace(name) == "" && p.d.Names != nil {
		name, _ = p.d.Names.Get(id)
	}
	name = strings.Join(strings.Fields(strings.ReplaceAll(name, "`", "")), " ")
	if name == "" || name == id {
		for _, typed := range []string{echogate.PlatformWeb + ":", echogate.PlatformConsole + ":"} {
			if bare, ok := strings.CutPrefix(id, typed); ok && bare != "" {
				return bare
			}
		}
		return id
	}
	name, _ = capLine(name, maxPersonName)
	return name
}

// nameOf is person without a name at hand (whoCan's namer).
func (p *Pipeline) nameOf(id string) string { return p.person(id, "") }

// actorName names the author of ev.
func (p *Pipeline) actorName(ev *echogate.InboundEvent) string {
	return p.person(ev.Actor.QualifiedID(ev.Conversation.Platform), ev.Actor.Name)
}

// requesterName names the user of t: the event's author when the turn is theirs (a resumed turn
// is its requester's, while its event is the decider's).
func (p *Pipeline) requesterName(t *Turn) string {
	if t.ev.Actor.QualifiedID(t.ev.Conversation.Platform) == t.userID {
		return p.person(t.userID, t.ev.Actor.Name)
	}
	return p.nameOf(t.userID)
}

// PersonName is how the gateway names the person of a qualified id to people (person), for the
// texts cmd renders (the web chat's restored approvals).
func (p *Pipeline) PersonName(id string) string { return p.nameOf(id) }

// denial is the reason a denied call gives the model: who denied it. A reaction carries no text
// on any platform, so one with text says why the call is denied when nobody denied it (the
// console, with no terminal to ask on).
func (p *Pipeline) denial(ev *echogate.InboundEvent) string {
	if ev.Kind == echogate.KindReaction && strings.TrimSpace(ev.Text) != "" {
		return "not approved: " + ev.Text
	}
	return "not approved: " + p.actorName(ev) + " denied it"
}
