package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// dmCacheSize bounds the users whose DM channel a Channel remembers.
const dmCacheSize = 1024

// dmCache remembers the DM channel of each user: conversations.open answers the same channel
// for a user every time (the bot has one DM with each person), so it is asked once per user
// per process. The zero value is ready to use.
type dmCache struct {
	mu sync.Mutex
	m  *lru[string, string]
}

func (d *dmCache) cache() *lru[string, string] {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = newLRU[string, string](dmCacheSize)
	}
	return d.m
}

// dmHints turns conversations.open's error codes into what to do about them.
var dmHints = map[string]string{
	"user_not_found":         "no such user in this workspace: give the member id (U…) from the user's profile (⋮ → Copy member ID)",
	"user_not_visible":       "the bot cannot see this user (another workspace, or a guest it shares no channel with)",
	"user_disabled":          "the user's account is deactivated",
	"cannot_dm_bot":          "the user is a bot, which cannot be sent a DM",
	"missing_scope":          "the app lacks the im:write scope: add it under OAuth & Permissions (or re-create the app from docs/slack-app-manifest.yaml) and reinstall the app",
	"not_allowed_token_type": "SLACK_BOT_TOKEN must be a bot token (xoxb-…)",
}

// OpenDM returns the conversation of the bot's direct messages with user (a member id, U…):
// Slack's conversations.open (scope im:write), with the channel's retries, remembered per user.
// It blocks on the Web API unless the user's DM is known. An error names the user and, for
// Slack's error codes, the fix.
func (c *Channel) OpenDM(ctx context.Context, user string) (echogate.ConversationRef, error) {
	if user == "" || strings.ContainsAny(user, ", ") {
		return echogate.ConversationRef{}, fmt.Errorf("slack: open a DM: %q is not one member id (U…)", user)
	}
	conv := func(ch string) echogate.ConversationRef {
		return echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: c.identity().TeamID, Channel: ch, DM: true}
	}
	dms := c.dms.cache()
	if ch, ok := dms.Get(user); ok {
		return conv(ch), nil
	}
	var ch string
	err := c.call(ctx, "conversations.open", "dm:"+user, prioHigh, func(ctx context.Context) error {
		got, _, _, err := c.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{user}})
		if err == nil && (got == nil || got.ID == "") {
			err = errors.New("the answer named no channel")
		}
		if err == nil {
			ch = got.ID
		}
		return err
	})
	if err != nil {
		if code, ok := apiCode(err); ok && dmHints[code] != "" {
			return echogate.ConversationRef{}, fmt.Errorf("%w: %s", err, dmHints[code])
		}
		return echogate.ConversationRef{}, err
	}
	dms.Add(user, ch)
	return conv(ch), nil
}
