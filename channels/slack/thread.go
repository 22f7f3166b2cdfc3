package slack

import (
	"context"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/echogate/echogate"
)

// threadReader reads a thread's earlier messages for the model, within conversations.replies'
// rate limit (1 request a minute for apps outside the Marketplace, by default): a token bucket on
// the channel's clock, and a pause as long as a 429's Retry-After. A read it cannot make now is
// skipped (the turn goes on without the context), never queued.
type threadReader struct {
	lim *rate.Limiter

	mu           sync.Mutex
	blockedUntil time.Time
}

func newThreadReader(perMinute float64) *threadReader {
	return &threadReader{lim: rate.NewLimiter(rate.Limit(perMinute/60), 1)}
}

// allow reports whether a read may be made at now, taking its token.
func (r *threadReader) allow(now time.Time) bool {
	r.mu.Lock()
	blocked := now.Before(r.blockedUntil)
	r.mu.Unlock()
	return !blocked && r.lim.AllowN(now, 1)
}

func (r *threadReader) block(until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until.After(r.blockedUntil) {
		r.blockedUntil = until
	}
}

// threadContext returns the messages before ev's in its thread, oldest first, at most
// Config.ThreadHistory, each attributed to its author (id, team and display name), when the
// bot is first addressed in that thread (it has not posted there). It also learns whether the
// bot is in the thread, so the read is never repeated for it. Without a free read it returns
// nil. Authors the access rules refuse get no users.info: the pipeline leaves their messages
// out.
func (c *Channel) threadContext(ctx context.Context, ev echogate.InboundEvent) []echogate.ThreadMessage {
	ch, thread, ts := ev.Message.Channel, ev.Conversation.Thread, ev.Message.ID
	if c.cfg.ThreadHistory < 0 || thread == "" || thread == ts || isDMChannel(ch) {
		return nil // a DM thread holds the user's own messages and the bot's: the store has them
	}
	key := msgKey(ch, thread)
	if in, ok := c.threads.Get(key); ok && in {
		return nil // the bot is in the thread: the store has what was said with it
	}
	now := c.cfg.Clock.Now()
	if !c.reads.allow(now) {
		c.log.Info("slack thread context skipped: conversations.replies budget spent (1 a minute outside the Marketplace)", "slack_channel", ch, "thread", thread)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	msgs, _, _, err := c.api.GetConversationRepliesContext(cctx, &slack.GetConversationRepliesParameters{
		ChannelID: ch, Timestamp: thread, Limit: 200, Inclusive: true})
	if err != nil {
		if ra, ok := retryAfterOf(err); ok {
			c.reads.block(c.cfg.Clock.Now().Add(ra))
		}
		c.logAPIError("conversations.replies", ch, err)
		return nil
	}
	self := c.identity()
	var earlier []slack.Message
	in := false
	for _, m := range msgs {
		own := (self.UserID != "" && m.User == self.UserID) || (self.BotID != "" && m.BotID == self.BotID)
		in = in || own
		if m.Timestamp != ts && tsLess(m.Timestamp, ts) {
			earlier = append(earlier, m)
		}
	}
	c.threads.Add(key, in)
	if in {
		return nil
	}
	if n := c.cfg.ThreadHistory; len(earlier) > n {
		earlier = earlier[len(earlier)-n:]
	}
	out := make([]echogate.ThreadMessage, 0, len(earlier))
	for _, m := range earlier {
		text := keepLines(m.Text, self.UserID)
		if text == "" {
			continue
		}
		tm := echogate.ThreadMessage{Author: m.Username, AuthorID: m.User, AuthorTeam: m.Team, Text: text, IsBot: m.BotID != ""}
		if m.User != "" {
			tm.Author = m.User
			as := ev
			as.Actor = echogate.Actor{ID: m.User, Team: m.Team, IsBot: tm.IsBot}
			if c.admits(as) {
				tm.Author = c.userName(ctx, m.User)
			}
		}
		out = append(out, tm)
	}
	return out
}

// userName resolves a user's display name once (users.info) and caches it; on failure it
// returns the id, and tries again next time.
func (c *Channel) userName(ctx context.Context, user string) string {
	if n, ok := c.names.Get(user); ok {
		return n
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	u, err := c.api.GetUserInfoContext(cctx, user)
	if err != nil {
		c.logAPIError("users.info", "", err)
		return user
	}
	name := u.Profile.DisplayName
	if name == "" {
		name = u.RealName
	}
	if name == "" {
		name = u.Name
	}
	if name == "" {
		name = user
	}
	c.names.Add(user, name)
	if c.cfg.NameResolved != nil && name != user {
		c.cfg.NameResolved(user, name)
	}
	return name
}

// tsLess orders Slack timestamps ("1700000000.000100").
func tsLess(a, b string) bool {
	ai, af := splitTS(a)
	bi, bf := splitTS(b)
	if ai != bi {
		return ai < bi
	}
	return af < bf
}

func splitTS(ts string) (string, string) {
	for i := 0; i < len(ts); i++ {
		if ts[i] == '.' {
			return leftPad(ts[:i], 12), ts[i+1:]
		}
	}
	return leftPad(ts, 12), ""
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}
