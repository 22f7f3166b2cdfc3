package discord

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// mapMessage turns a MESSAGE_CREATE into an event, or reports why it is not one. Pure: the
// bot's id, the mention policy and the time come in as arguments.
func mapMessage(m *discordgo.Message, botID string, requireMention bool, now time.Time) (echogate.InboundEvent, string) {
	var ev echogate.InboundEvent
	switch {
	case m == nil || m.Author == nil:
		return ev, "no author"
	case m.ID == "" || m.ChannelID == "" || m.Author.ID == "":
		return ev, "incomplete message" // no event can be built, nor an answer addressed
	case botID != "" && m.Author.ID == botID:
		return ev, "own message"
	case m.Author.Bot || m.WebhookID != "":
		return ev, "bot or webhook message"
	case m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply:
		return ev, "system message"
	}
	dm := m.GuildID == ""
	kind := echogate.KindDirect
	if !dm {
		switch {
		case mentions(m, botID), repliesTo(m, botID):
			kind = echogate.KindMention
		case !requireMention:
			kind = echogate.KindMention
		default:
			return ev, "guild message not addressed to the bot"
		}
	}
	text := cleanContent(m, botID)
	atts := make([]echogate.Attachment, 0, len(m.Attachments))
	for _, a := range m.Attachments {
		if a == nil {
			continue
		}
		atts = append(atts, echogate.Attachment{ID: a.ID, Name: a.Filename, MIME: a.ContentType, Size: int64(a.Size), URL: a.URL})
	}
	if text == "" && len(atts) == 0 {
		return ev, "empty message"
	}
	name := m.Author.GlobalName
	if m.Member != nil && m.Member.Nick != "" {
		name = m.Member.Nick // the name the server shows
	}
	if name == "" {
		name = m.Author.Username
	}
	ev = echogate.InboundEvent{
		ID:   m.ID,
		Kind: kind,
		Conversation: echogate.ConversationRef{
			Platform:  echogate.PlatformDiscord,
			Workspace: m.GuildID,
			Channel:   m.ChannelID,
			DM:        dm,
		},
		Actor:      echogate.Actor{ID: m.Author.ID, Name: name, IsBot: m.Author.Bot},
		Text:       text,
		Message:    echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: m.ChannelID, ID: m.ID},
		ReceivedAt: now,
	}
	if len(atts) > 0 {
		ev.Attachments = atts
	}
	return ev, ""
}

func mentions(m *discordgo.Message, botID string) bool {
	if botID == "" {
		return false
	}
	for _, u := range m.Mentions {
		if u != nil && u.ID == botID {
			return true
		}
	}
	return strings.Contains(m.Content, "<@"+botID+">") || strings.Contains(m.Content, "<@!"+botID+">")
}

func repliesTo(m *discordgo.Message, botID string) bool {
	return botID != "" && m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == botID
}

// cleanContent removes the bot's mention markup and renders other user mentions as @name.
func cleanContent(m *discordgo.Message, botID string) string {
	s := m.Content
	if botID != "" {
		s = strings.ReplaceAll(s, "<@"+botID+">", "")
		s = strings.ReplaceAll(s, "<@!"+botID+">", "")
	}
	for _, u := range m.Mentions {
		if u == nil || u.ID == botID {
			continue
		}
		name := u.GlobalName
		if name == "" {
			name = u.Username
		}
		s = strings.ReplaceAll(s, "<@"+u.ID+">", "@"+name)
		s = strings.ReplaceAll(s, "<@!"+u.ID+">", "@"+name)
	}
	// Collapse the gap a leading or inner mention leaves.
	s = strings.TrimSpace(s)
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}

// canonicalEmoji returns the canonical form of a reaction emoji: unicode emoji without variation
// selectors (so "✅\uFE0F" matches echogate.ReactionApprove), custom emoji as "name:id".
func canonicalEmoji(name, id string) string {
	if id != "" {
		return name + ":" + id
	}
	return strings.Map(func(r rune) rune {
		if r == '\uFE0F' || r == '\uFE0E' {
			return -1
		}
		return r
	}, name)
}

// reactionAdd is MESSAGE_REACTION_ADD as sent on the wire. discordgo's MessageReactionAdd
// (v0.28.1, as v0.29.0) lacks message_author_id, so the raw payload is decoded here.
type reactionAdd struct {
	UserID          string `json:"user_id"`
	ChannelID       string `json:"channel_id"`
	MessageID       string `json:"message_id"`
	GuildID         string `json:"guild_id"`
	MessageAuthorID string `json:"message_author_id"`
	Member          *struct {
		User *struct {
			ID         string `json:"id"`
			Username   string `json:"username"`
			GlobalName string `json:"global_name"`
			Bot        bool   `json:"bot"`
		} `json:"user"`
		Nick string `json:"nick"`
	} `json:"member"`
	Emoji struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"emoji"`
}

// mapReaction turns a reaction on the bot's own message into an event, or reports why not.
// ownMessage says whether the reacted message is the bot's (decided by the caller when the
// payload lacks message_author_id).
func mapReaction(r reactionAdd, botID string, ownMessage bool, now time.Time) (echogate.InboundEvent, string) {
	var ev echogate.InboundEvent
	switch {
	case r.UserID == "" || r.MessageID == "" || r.ChannelID == "":
		return ev, "incomplete reaction"
	case botID != "" && r.UserID == botID:
		return ev, "own reaction"
	case r.Member != nil && r.Member.User != nil && r.Member.User.Bot:
		return ev, "bot reaction"
	case !ownMessage:
		return ev, "reaction on another user's message"
	}
	emoji := canonicalEmoji(r.Emoji.Name, r.Emoji.ID)
	if emoji == "" {
		return ev, "reaction without emoji"
	}
	actor := echogate.Actor{ID: r.UserID}
	if r.Member != nil {
		actor.Name = r.Member.Nick
		if r.Member.User != nil && actor.Name == "" {
			actor.Name = r.Member.User.GlobalName
			if actor.Name == "" {
				actor.Name = r.Member.User.Username
			}
		}
	}
	target := echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: r.ChannelID, ID: r.MessageID}
	return echogate.InboundEvent{
		ID:   r.MessageID + ":" + r.UserID + ":" + emoji,
		Kind: echogate.KindReaction,
		Conversation: echogate.ConversationRef{
			Platform:  echogate.PlatformDiscord,
			Workspace: r.GuildID,
			Channel:   r.ChannelID,
			DM:        r.GuildID == "",
		},
		Actor:      actor,
		Reaction:   emoji,
		Target:     target,
		Message:    target,
		ReceivedAt: now,
	}, ""
}

// onMessageCreate runs on discordgo's gateway reader (SyncEvents): it maps and hands off;
// REST reads for thread context run in the channel's lane (lanes.go), never here.
func (c *Channel) onMessageCreate(_ *discordgo.Session, m *discordgo.MessageCreate) {
	if m == nil || m.Message == nil {
		return
	}
	botID := c.BotID()
	ev, why := mapMessage(m.Message, botID, *c.cfg.RequireMention, c.clock.Now())
	if why != "" {
		c.log.Debug("discord: message ignored", "event_id", m.ID, "reason", why)
		return
	}
	c.handleMessage(m.Message, ev, botID)
}

// onRawEvent handles dispatches discordgo does not model fully (MESSAGE_REACTION_ADD).
func (c *Channel) onRawEvent(_ *discordgo.Session, e *discordgo.Event) {
	if e == nil || e.Type != "MESSAGE_REACTION_ADD" {
		return
	}
	var r reactionAdd
	if err := json.Unmarshal(e.RawData, &r); err != nil {
		c.log.Warn("discord: bad MESSAGE_REACTION_ADD payload", "err", err)
		return
	}
	botID := c.BotID()
	switch {
	case r.MessageAuthorID != "":
		c.deliverReaction(r, botID, r.MessageAuthorID == botID)
	case c.posted.has(r.MessageID):
		c.deliverReaction(r, botID, true)
	case r.UserID == botID:
		// our own reaction; nothing to look up
	case !c.admits(reactionProbe(r)):
		// A refused person's reaction costs no look-up: on a message this process did not
		// post, it could only be refused.
		c.log.Debug("discord: reaction of a refused user on an unknown message ignored", "event_id", r.MessageID)
	default:
		c.lookUpReaction(r, botID) // whose message is it? (reaction.go)
	}
}

// reactionProbe is the event r would become, for asking Config.Admits before a look-up.
func reactionProbe(r reactionAdd) echogate.InboundEvent {
	return echogate.InboundEvent{Kind: echogate.KindReaction, Actor: echogate.Actor{ID: r.UserID},
		Conversation: echogate.ConversationRef{Platform: echogate.PlatformDiscord, Workspace: r.GuildID, Channel: r.ChannelID, DM: r.GuildID == ""}}
}

func (c *Channel) deliverReaction(r reactionAdd, botID string, own bool) {
	ev, why := mapReaction(r, botID, own, c.clock.Now())
	if why != "" {
		c.log.Debug("discord: reaction ignored", "event_id", r.MessageID, "reason", why)
		return
	}
	c.deliverInOrder(r.ChannelID, ev)
}

// context is Run's context (or a cancelled one outside Run).
func (c *Channel) context() context.Context {
	if p := c.runCtx.Load(); p != nil && c.life.Err() == nil {
		return *p
	}
	return c.life
}

// deliver hands ev to the sink, bounded by SinkTimeout. Discord does not redeliver, so when the
// sink refuses a message the user is told to try again.
func (c *Channel) deliver(ev echogate.InboundEvent) {
	sp := c.sink.Load()
	if sp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.context(), c.cfg.SinkTimeout)
	err := (*sp)(ctx, ev)
	cancel()
	if err == nil {
		return
	}
	c.log.Warn("discord: sink refused event", "err", err, "event_id", ev.ID, "session", string(ev.SessionKey()), "kind", ev.Kind.String())
	c.tellBusy(ev)
}

// tellBusy tells the author of a message that was not taken to try again (off the reader).
func (c *Channel) tellBusy(ev echogate.InboundEvent) {
	if ev.Kind == echogate.KindReaction || c.life.Err() != nil {
		return
	}
	c.spawn(func() {
		ctx, cancel := context.WithTimeout(c.life, c.cfg.RequestTimeout)
		defer cancel()
		if ev.Interaction != "" { // a command: answered privately, like its answer would be
			if _, err := c.respondPrivately(ctx, ev.Interaction, "Sorry, I'm too busy right now. Please try again in a moment."); err != nil {
				c.log.Warn("discord: answer busy command", "err", err, "event_id", ev.ID)
			}
			return
		}
		reply := &messageReference{MessageID: ev.Message.ID, ChannelID: ev.Conversation.Channel}
		if ev.Conversation.DM {
			reply = nil
		}
		if _, _, err := c.post(ctx, ev.Conversation.Channel, "Sorry, I'm too busy to take this message right now. Please try again in a moment.", reply, false); err != nil {
			c.log.Warn("discord: post busy notice", "err", err, "event_id", ev.ID)
		}
	})
}
