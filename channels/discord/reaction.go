package discord

import (
	"context"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/backoff"
)

// reactionLookups bounds the attempts of GET message for a reaction whose message is unknown;
// reactionBackoff is the wait before the second (doubled before each later one).
const (
	reactionLookups = 3
	reactionBackoff = 250 * time.Millisecond
)

// lookUpReaction decides a reaction whose payload does not say whose message it is and whose
// message this process did not post (after a restart): first from the gateway's store
// (Config.SessionOf: an approval prompt's pause records the prompt's reference), then from
// GET message, retried. It runs off the gateway reader, at most cap(fetchSem) at a time; a
// reaction beyond that is dropped with a warning.
func (c *Channel) lookUpReaction(r reactionAdd, botID string) {
	ctx := c.context()
	select {
	case c.fetchSem <- struct{}{}:
	default:
		c.log.Warn("discord: too many reaction look-ups; reaction dropped", "event_id", r.MessageID)
		return
	}
	started := c.spawn(func() {
		defer func() { <-c.fetchSem }()
		defer c.recovered(nil, "reaction lookup")
		if conv, ok := c.storedSession(ctx, r); ok {
			c.posted.add(r.MessageID)
			c.deliverReactionIn(r, botID, conv)
			return
		}
		own, err := c.ownMessage(ctx, r, botID)
		if err != nil {
			c.log.Warn("discord: look up reacted message; reaction dropped", "err", err, "channel_id", r.ChannelID, "event_id", r.MessageID)
			return
		}
		if own {
			c.posted.add(r.MessageID)
		}
		c.deliverReaction(r, botID, own)
	})
	if !started {
		<-c.fetchSem
	}
}

// storedSession asks Config.SessionOf (bounded by SinkTimeout) for the conversation of the
// reacted message.
func (c *Channel) storedSession(ctx context.Context, r reactionAdd) (echogate.ConversationRef, bool) {
	if c.cfg.SessionOf == nil {
		return echogate.ConversationRef{}, false
	}
	sctx, cancel := context.WithTimeout(ctx, c.cfg.SinkTimeout)
	defer cancel()
	return c.cfg.SessionOf(sctx, echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: r.ChannelID, ID: r.MessageID})
}

// ownMessage reports whether the reacted message is the bot's, asking Discord up to
// reactionLookups times (an unknown message is not the bot's).
func (c *Channel) ownMessage(ctx context.Context, r reactionAdd, botID string) (bool, error) {
	var err error
	waits := backoff.Policy{Initial: reactionBackoff, Max: reactionBackoff << reactionLookups, Jitter: backoff.NoJitter}
	for attempt := 0; attempt < reactionLookups; attempt++ {
		if attempt > 0 && !c.sleep(ctx, waits.Delay(attempt)) {
			return false, ctx.Err()
		}
		var msg *discordgo.Message
		err = c.call(ctx, "get message", true, func(opts ...discordgo.RequestOption) error {
			var err error
			msg, err = c.sess.ChannelMessage(r.ChannelID, r.MessageID, opts...)
			return err
		})
		if err == nil {
			return msg.Author != nil && msg.Author.ID == botID, nil
		}
		if restStatus(err) == http.StatusNotFound || ctx.Err() != nil {
			return false, err
		}
	}
	return false, err
}

// deliverReactionIn delivers a reaction on the bot's message in conv, the conversation the
// store recorded for it.
func (c *Channel) deliverReactionIn(r reactionAdd, botID string, conv echogate.ConversationRef) {
	ev, why := mapReaction(r, botID, true, c.clock.Now())
	if why != "" {
		c.log.Debug("discord: reaction ignored", "event_id", r.MessageID, "reason", why)
		return
	}
	if conv.Platform == echogate.PlatformDiscord && conv.Channel != "" {
		ev.Conversation = conv
	}
	c.deliverInOrder(r.ChannelID, ev)
}
