package discord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/bwmarrin/discordgo"
	golru "github.com/hashicorp/golang-lru/v2"

	"github.com/echogate/echogate"
)

// dmCacheSize bounds the users whose DM channel a Channel remembers.
const dmCacheSize = 1024

// dmCache remembers the DM channel of each user: Discord's create DM answers the same channel
// for a user every time, so it is asked once per user per process. The zero value is ready.
type dmCache struct {
	mu sync.Mutex
	m  *golru.Cache[string, string]
}

func (d *dmCache) cache() *golru.Cache[string, string] {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m, _ = golru.New[string, string](dmCacheSize) // fails only for a size below 1
	}
	return d.m
}

// dmHints turns Discord's JSON error codes for create DM (and for the first message after it)
// into what to do about them.
var dmHints = map[int]string{
	10013: "no such Discord user: give the user's id (Developer Mode → right-click the user → Copy User ID)",
	50007: "Discord refuses to let the bot message this user (they block DMs from server members, share no server with the bot, or it is a bot)",
	50035: "not a user id: give the user's numeric id (Developer Mode → right-click the user → Copy User ID)",
}

// OpenDM returns the conversation of the bot's direct messages with user (a user id): Discord's
// create DM (POST /users/@me/channels), remembered per user. It blocks on the REST API unless
// the user's DM is known. An error names the user and, for Discord's error codes, the fix.
func (c *Channel) OpenDM(ctx context.Context, user string) (echogate.ConversationRef, error) {
	conv := func(ch string) echogate.ConversationRef {
		return echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: ch, DM: true}
	}
	if _, err := strconv.ParseUint(user, 10, 64); err != nil {
		return echogate.ConversationRef{}, fmt.Errorf("discord: open a DM with %q: %s", user, dmHints[50035])
	}
	dms := c.dms.cache()
	if ch, ok := dms.Get(user); ok {
		return conv(ch), nil
	}
	var ch *discordgo.Channel
	err := c.call(ctx, "create DM", true, func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = c.sess.UserChannelCreate(user, opts...)
		return err
	})
	if err == nil && (ch == nil || ch.ID == "") {
		err = errors.New("the answer named no channel")
	}
	if err != nil {
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Message != nil && dmHints[re.Message.Code] != "" {
			return echogate.ConversationRef{}, fmt.Errorf("discord: open a DM with %s: %s (code %d): %s", user, re.Message.Message, re.Message.Code, dmHints[re.Message.Code])
		}
		return echogate.ConversationRef{}, fmt.Errorf("discord: open a DM with %s: %w", user, err)
	}
	dms.Add(user, ch.ID)
	return conv(ch.ID), nil
}
