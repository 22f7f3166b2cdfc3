package schedule

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

// Target is where a job's answer goes (its `deliver:`), parsed.
type Target struct {
	Platform string // echogate.PlatformSlack, PlatformDiscord, PlatformWeb, or "webhook"
	Channel  string // channel id (slack, discord) or session id (web)
	Thread   string // Slack thread ts
	DMUser   string // for slack:dm:<user> and discord:dm:<user>: the adapter opens the DM
	Webhook  string // for webhook:https://…
}

// dmUser is the form of a user id a DM target names, per platform.
var dmUser = map[string]*regexp.Regexp{
	echogate.PlatformSlack:   regexp.MustCompile(`^[UW][A-Z0-9]+$`),
	echogate.PlatformDiscord: regexp.MustCompile(`^[0-9]{1,20}$`),
}

var dmUserHint = map[string]string{
	echogate.PlatformSlack:   "a Slack DM needs the user's member id (U…, from their profile: ⋮ → Copy member ID)",
	echogate.PlatformDiscord: "a Discord DM needs the user's numeric id (Developer Mode → right-click the user → Copy User ID)",
}

// ParseTarget reads a delivery target: slack:<channel>[/<thread ts>], slack:dm:<user>,
// discord:<channel>, discord:dm:<user>, web:<session>, webhook:https://…. Errors wrap
// ErrInvalid and show the accepted forms.
func ParseTarget(s string) (Target, error) {
	bad := func(why string) (Target, error) {
		return Target{}, fmt.Errorf("%w: deliver %q: %s; use slack:<channel>[/<thread ts>], slack:dm:<user>, discord:<channel>, discord:dm:<user>, web:<session> or webhook:https://…", ErrInvalid, s, why)
	}
	platform, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || rest == "" {
		return bad("no platform and place")
	}
	if strings.ContainsAny(rest, " \t\r\n") && platform != "webhook" {
		return bad("spaces in the place")
	}
	switch platform {
	case echogate.PlatformSlack, echogate.PlatformDiscord:
		if user, ok := strings.CutPrefix(rest, "dm:"); ok {
			if !dmUser[platform].MatchString(user) {
				return bad(dmUserHint[platform])
			}
			return Target{Platform: platform, DMUser: user}, nil
		}
		ch, thread, _ := strings.Cut(rest, "/")
		if ch == "" || strings.Contains(ch, ":") || strings.Contains(thread, "/") {
			return bad("not a channel id")
		}
		if thread != "" && platform == echogate.PlatformDiscord {
			return bad("a Discord thread is a channel of its own: give its id as the channel")
		}
		return Target{Platform: platform, Channel: ch, Thread: thread}, nil
	case echogate.PlatformWeb:
		return Target{Platform: platform, Channel: rest}, nil
	case "webhook":
		u, err := url.Parse(rest)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return bad("a webhook must be an https URL without credentials")
		}
		return Target{Platform: "webhook", Webhook: u.String()}, nil
	}
	return bad("unknown platform " + fmt.Sprintf("%q", platform))
}

// Conversation is the target as the conversation a reply goes to (slack, discord, web; not
// DMs, which the adapter opens first, nor webhooks).
func (t Target) Conversation() echogate.ConversationRef {
	return echogate.ConversationRef{Platform: t.Platform, Channel: t.Channel, Thread: t.Thread}
}

// SessionKey is the session a run of j at slot uses: its own for `session: isolated` (a fresh
// conversation each run), one for the job for `shared`. It never collides with a chat
// conversation's session.
func SessionKey(j Job, slot time.Time) echogate.SessionKey {
	if j.Session == "shared" {
		return echogate.SessionKey("schedule:" + j.ID)
	}
	return echogate.SessionKey(EventKey(j.ID, slot))
}
