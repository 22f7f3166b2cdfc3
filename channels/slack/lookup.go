package slack

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// botInThread reports whether the bot has posted in the thread: from memory of its own posts,
// else (after a restart, and when read allows it) by reading the thread once; the answer is
// cached.
func (c *Channel) botInThread(ctx context.Context, ch, thread string, read bool) bool {
	key := msgKey(ch, thread)
	if in, ok := c.threads.Get(key); ok {
		return in
	}
	if !read {
		return false
	}
	self := c.identity()
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	msgs, _, _, err := c.api.GetConversationRepliesContext(cctx, &slack.GetConversationRepliesParameters{ChannelID: ch, Timestamp: thread, Limit: 200, Inclusive: true})
	if err != nil {
		c.logAPIError("conversations.replies", ch, err)
		return false
	}
	in := false
	for _, m := range msgs {
		if (self.UserID != "" && m.User == self.UserID) || (self.BotID != "" && m.BotID == self.BotID) {
			in = true
			break
		}
	}
	c.threads.Add(key, in)
	return in
}

// conversationOf finds the session a message of the bot belongs to: from memory of recent
// posts, else by looking the message up (conversations.replies, then conversations.history).
// Without lookup (the access rules refuse whoever reacted) it reads nothing: the channel is
// enough for the pipeline to refuse the event.
func (c *Channel) conversationOf(ctx context.Context, team, ch, ts string, lookup bool) (echogate.ConversationRef, bool) {
	if conv, ok := c.sent.Get(msgKey(ch, ts)); ok {
		return conv, true
	}
	if !lookup {
		return echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: team, Channel: ch, DM: isDMChannel(ch)}, true
	}
	if c.cfg.SessionOf != nil {
		if conv, ok := c.cfg.SessionOf(ctx, echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: ch, ID: ts}); ok {
			c.sent.Add(msgKey(ch, ts), conv)
			return conv, true
		}
	}
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: team, Channel: ch, DM: isDMChannel(ch)}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	msgs, _, _, err := c.api.GetConversationRepliesContext(cctx, &slack.GetConversationRepliesParameters{ChannelID: ch, Timestamp: ts, Limit: 1, Inclusive: true})
	if err == nil {
		for _, m := range msgs {
			if m.Timestamp == ts {
				if m.ThreadTimestamp != "" && m.ThreadTimestamp != m.Timestamp {
					conv.Thread = m.ThreadTimestamp
				}
				c.sent.Add(msgKey(ch, ts), conv)
				return conv, true
			}
		}
	} else {
		c.logAPIError("conversations.replies", ch, err)
	}
	h, err := c.api.GetConversationHistoryContext(cctx, &slack.GetConversationHistoryParameters{ChannelID: ch, Latest: ts, Oldest: ts, Inclusive: true, Limit: 1})
	if err != nil {
		c.logAPIError("conversations.history", ch, err)
		c.log.Warn("slack reaction dropped: cannot find the session of the reacted message", "message", ts)
		return conv, false
	}
	for _, m := range h.Messages {
		if m.Timestamp == ts {
			if m.ThreadTimestamp != "" && m.ThreadTimestamp != m.Timestamp {
				conv.Thread = m.ThreadTimestamp
			}
			c.sent.Add(msgKey(ch, ts), conv)
			return conv, true
		}
	}
	c.log.Warn("slack reaction dropped: reacted message not found", "message", ts)
	return conv, false
}
