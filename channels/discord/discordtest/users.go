package discordtest

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// --- what users do ---

// SendDM dispatches MESSAGE_CREATE for a DM from user to the bot and returns the message.
func (s *Server) SendDM(user User, text string) Message {
	s.mu.Lock()
	ch := s.dmChannelLocked(user.ID)
	s.mu.Unlock()
	return s.post(user, "", ch, text, "", false, nil)
}

// SendGuildMessage dispatches MESSAGE_CREATE for a message by user in a guild channel (or
// thread) channelID. With mentionBot the text starts with the bot's mention markup.
func (s *Server) SendGuildMessage(guildID, channelID string, user User, text string, mentionBot bool) Message {
	s.mu.Lock()
	s.guildOf[channelID] = guildID
	s.mu.Unlock()
	return s.post(user, guildID, channelID, text, "", mentionBot, nil)
}

// ReplyInGuild dispatches MESSAGE_CREATE for a reply by user to message replyTo (no mention).
func (s *Server) ReplyInGuild(guildID, channelID string, user User, text, replyTo string) Message {
	s.mu.Lock()
	s.guildOf[channelID] = guildID
	s.mu.Unlock()
	return s.post(user, guildID, channelID, text, replyTo, false, nil)
}

func (s *Server) post(user User, guildID, channelID, text, replyTo string, mentionBot bool, files []Attachment) Message {
	s.mu.Lock()
	if mentionBot {
		text = "<@" + s.opts.BotID + "> " + text
	}
	m := &Message{ID: s.newID(), ChannelID: channelID, GuildID: guildID, Author: user, Content: text, ReferenceID: replyTo, CreatedAt: time.Now()}
	m.Attachments = s.hostLocked(files)
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	out := s.wireLocked(m, true)
	// A reply pings the author of the replied-to message (Discord's default), so a reply to
	// the bot mentions it, and its content is visible without MESSAGE_CONTENT.
	replyPing := false
	if ref, ok := s.messages[replyTo]; ok && replyTo != "" && ref.Author.ID == s.opts.BotID {
		replyPing = true
	}
	if mentionBot || replyPing {
		out.Mentions = append(out.Mentions, wireUser{ID: s.opts.BotID, Username: s.opts.BotName, Bot: true})
	}
	out = s.visibleLocked(out, mentionBot || replyPing)
	c := m.clone()
	s.mu.Unlock()
	s.Dispatch("MESSAGE_CREATE", out)
	return c
}

// AddReaction dispatches MESSAGE_REACTION_ADD: user reacted with emoji to message messageID.
func (s *Server) AddReaction(messageID string, user User, emoji string) error {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("discordtest: add reaction: unknown message %s", messageID)
	}
	ch, guild, author := m.ChannelID, m.GuildID, m.Author.ID
	s.mu.Unlock()
	s.dispatchReaction(ch, guild, messageID, author, user, emoji)
	return nil
}

func (s *Server) dispatchReaction(channelID, guildID, messageID, authorID string, user User, emoji string) {
	d := map[string]any{
		"user_id": user.ID, "channel_id": channelID, "message_id": messageID,
		"emoji": map[string]any{"id": nil, "name": emoji}, "burst": false, "type": 0,
	}
	if !s.opts.OmitMessageAuthorID {
		d["message_author_id"] = authorID
	}
	if guildID != "" {
		d["guild_id"] = guildID
		d["member"] = map[string]any{"user": wireUser{ID: user.ID, Username: user.Username, GlobalName: user.GlobalName, Bot: user.Bot}, "roles": []string{}}
	}
	s.Dispatch("MESSAGE_REACTION_ADD", d)
}

// sortedKeys is a helper for stable output in error messages.
func sortedKeys(m map[string]*gwSession) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nonceUse is the message a nonce first created and when.
type nonceUse struct {
	id string
	at time.Time
}

func (s *Server) nonceWindow() time.Duration {
	if s.opts.NonceWindow > 0 {
		return s.opts.NonceWindow
	}
	return 5 * time.Minute
}

// DeleteMessage deletes a message as a moderator would: later edits of it answer 404
// Unknown Message. It reports whether the message existed.
func (s *Server) DeleteMessage(id string) bool {
	s.mu.Lock()
	m, ok := s.messages[id]
	if ok {
		m.Deleted = true
	}
	s.notify()
	s.mu.Unlock()
	return ok
}

// ExpireNonces ends the nonce window of every message created so far: a create repeating one of
// their nonces creates a new message, as on Discord minutes later.
func (s *Server) ExpireNonces() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.nonces)
}

// StallWhen makes every later message create or edit whose resulting content match accepts
// hang once applied: the message exists (or shows the edit) but the response waits until
// ReleaseStalls, Close or the client going away, as when a process dies between Discord taking
// a post and its answer arriving.
func (s *Server) StallWhen(match func(content string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stallMatch = match
	if s.stallCh == nil {
		s.stallCh = make(chan struct{})
	}
}

// ReleaseStalls answers the stalled requests and stops stalling.
func (s *Server) ReleaseStalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stallCh != nil {
		close(s.stallCh)
		s.stallCh, s.stallMatch = nil, nil
	}
}

func (s *Server) stallLocked(content string) chan struct{} {
	if s.stallMatch != nil && s.stallMatch(content) {
		return s.stallCh
	}
	return nil
}

// waitStall holds a response while stall (from stallLocked) is open; false when the client went
// away (nothing is to be written).
func waitStall(ctx context.Context, stall chan struct{}) bool {
	if stall == nil {
		return true
	}
	select {
	case <-stall:
		return true
	case <-ctx.Done():
		return false
	}
}
