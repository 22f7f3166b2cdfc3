package discord

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// call runs one REST request through fn with a per-request timeout and discordgo's per-route
// limiter; a 429 is retried after its retry_after (waiting on the clock, honouring ctx) up to
// MaxRateLimitRetries times when retry429 is set. A 429 that is not retried, or that asks for
// more than MaxRetryAfter, is returned as *echogate.RetryAfterError. A 401 wraps ErrUnauthorized.
func (c *Channel) call(ctx context.Context, op string, retry429 bool, fn func(opts ...discordgo.RequestOption) error) error {
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		err := fn(discordgo.WithContext(rctx), discordgo.WithRetryOnRatelimit(false))
		cancel()
		if err == nil {
			return nil
		}
		var rl *discordgo.RateLimitError
		if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil {
			after := rl.RetryAfter
			if !retry429 || attempt >= c.cfg.MaxRateLimitRetries || after > c.cfg.MaxRetryAfter {
				return &echogate.RetryAfterError{After: after, Err: fmt.Errorf("%w: %s (after %d retries)", ErrRateLimited, op, attempt)}
			}
			c.log.Info("discord: rate limited; retrying", "op", op, "retry_after", after, "attempt", attempt+1)
			if !c.sleep(ctx, after) {
				return ctx.Err()
			}
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if restStatus(err) == http.StatusUnauthorized {
			return fmt.Errorf("%w (HTTP 401 on %s): set DISCORD_BOT_TOKEN to the current bot token (Developer Portal → Bot → Reset Token)", ErrUnauthorized, op)
		}
		return err
	}
}

// restStatus returns the HTTP status of a discordgo REST error, or 0.
func restStatus(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

type messageReference struct {
	MessageID       string `json:"message_id"`
	ChannelID       string `json:"channel_id,omitempty"`
	FailIfNotExists bool   `json:"fail_if_not_exists"`
}

type allowedMentions struct {
	Parse       []string `json:"parse"`
	RepliedUser bool     `json:"replied_user"`
}

// createMessage is the body of POST /channels/{id}/messages. The nonce with enforce_nonce makes a
// retried create (after a 502 or a lost response) return the first message instead of posting a
// second one.
type createMessage struct {
	Content          string            `json:"content"`
	Nonce            string            `json:"nonce,omitempty"`
	EnforceNonce     bool              `json:"enforce_nonce,omitempty"`
	MessageReference *messageReference `json:"message_reference,omitempty"`
	AllowedMentions  allowedMentions   `json:"allowed_mentions"`
	Components       []any             `json:"components,omitempty"`
}

// noMentions keeps model output from pinging @everyone, roles or users; a reply still notifies
// the user it answers.
var noMentions = allowedMentions{Parse: []string{}, RepliedUser: true}

func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b[:]) // 24 characters; Discord allows 25
}

// post creates one message. priority callers wait for the channel budget; others give up (ok ==
// false, no error) when no token is spare.
func (c *Channel) post(ctx context.Context, channelID, content string, reply *messageReference, priority bool) (ref echogate.MessageRef, ok bool, err error) {
	return c.postWith(ctx, channelID, content, reply, priority, nil, "")
}

// postWith is post with message components (the approval buttons) and a nonce ("" for a random
// one). When Discord returns an earlier message for the nonce (a post repeated within its nonce
// window, e.g. by a turn recovered after a crash) whose content differs, it is edited to content.
func (c *Channel) postWith(ctx context.Context, channelID, content string, reply *messageReference, priority bool, components []any, nonce string) (ref echogate.MessageRef, ok bool, err error) {
	if priority {
		if err := c.budget.wait(ctx, channelID); err != nil {
			return ref, false, err
		}
	} else if !c.budget.tryTake(channelID) {
		return ref, false, nil
	}
	if nonce == "" {
		nonce = newNonce()
	}
	body := createMessage{Content: content, Nonce: nonce, EnforceNonce: true, MessageReference: reply, AllowedMentions: noMentions, Components: components}
	endpoint := discordgo.EndpointChannelMessages(channelID)
	var raw []byte
	err = c.call(ctx, "post to "+channelID, priority, func(opts ...discordgo.RequestOption) error {
		var err error
		raw, err = c.sess.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, opts...)
		return err
	})
	if err != nil {
		return ref, false, err
	}
	var m struct {
		ID        string `json:"id"`
		ChannelID string `json:"channel_id"`
		Content   string `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		return ref, false, fmt.Errorf("decode created message: %v (body %.200q)", err, raw)
	}
	if m.ChannelID == "" {
		m.ChannelID = channelID
	}
	c.posted.add(m.ID)
	ref = echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: m.ChannelID, ID: m.ID}
	if m.Content != content && components == nil { // an edit would drop a prompt's buttons
		if _, err := c.edit(ctx, ref, content, true); err != nil {
			return ref, false, fmt.Errorf("correct the message posted earlier for nonce %s: %w", nonce, err)
		}
	}
	return ref, true, nil
}

// edit replaces a message's content. priority as for post.
func (c *Channel) edit(ctx context.Context, ref echogate.MessageRef, content string, priority bool) (ok bool, err error) {
	if priority {
		if err := c.budget.wait(ctx, ref.Channel); err != nil {
			return false, err
		}
	} else if !c.budget.tryTake(ref.Channel) {
		return false, nil
	}
	am := discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: true}
	none := []discordgo.MessageComponent{} // an edit (a decided prompt) removes the buttons
	me := &discordgo.MessageEdit{ID: ref.ID, Channel: ref.Channel, Content: &content, AllowedMentions: &am, Components: &none}
	err = c.call(ctx, "edit "+ref.Channel+"/"+ref.ID, priority, func(opts ...discordgo.RequestOption) error {
		_, err := c.sess.ChannelMessageEditComplex(me, opts...)
		return err
	})
	return err == nil, err
}

func (c *Channel) deleteMessage(ctx context.Context, ref echogate.MessageRef) error {
	return c.call(ctx, "delete "+ref.Channel+"/"+ref.ID, true, func(opts ...discordgo.RequestOption) error {
		return c.sess.ChannelMessageDelete(ref.Channel, ref.ID, opts...)
	})
}

// replyRef is the message reference the first message of an answer carries: the inbound message
// in guild channels (so the answer is visibly linked to the question); none in DMs.
func replyRef(out echogate.Outbound) *messageReference {
	if out.Conversation.DM || out.ReplyTo.ID == "" {
		return nil
	}
	if out.ReplyTo.Channel != "" && out.ReplyTo.Channel != out.Conversation.Channel {
		return nil
	}
	return &messageReference{MessageID: out.ReplyTo.ID, ChannelID: out.Conversation.Channel}
}

// Send posts out to out.Conversation.Channel, split into several messages when it is longer than
// 2000 characters, and adds out.Reactions to the last message. It blocks until Discord accepted
// every message (waiting for the channel budget and 429 retry_after) or ctx ends, and returns the
// reference of the last message (the one carrying the reactions). When a later part fails, the
// error is returned with the reference of the last part posted. Failing to add a reaction is
// logged, not returned: the prompt is posted and the text fallback still works.
func (c *Channel) Send(ctx context.Context, out echogate.Outbound) (_ echogate.MessageRef, err error) {
	defer c.recovered(&err, "send")
	if out.Interaction != "" {
		return c.respondPrivately(ctx, out.Interaction, out.Text)
	}
	ch := out.Conversation.Channel
	if ch == "" && out.PrivateTo != "" {
		return c.sendDM(ctx, out) // for one person's eyes (elicit.go)
	}
	if ch == "" {
		return echogate.MessageRef{}, fmt.Errorf("discord: send: %w: Outbound.Conversation.Channel is empty", ErrNoChannel)
	}
	key := turnKey(out.Turn, out.Kind)
	chunks := withMarker(out.Text, key)
	if len(chunks) == 0 {
		return echogate.MessageRef{}, fmt.Errorf("discord: send to %s: %w", ch, ErrEmptyMessage)
	}
	var last echogate.MessageRef
	reply := replyRef(out)
	for i, chunk := range chunks {
		var components []any
		if out.Kind == echogate.OutApprovalPrompt && i == len(chunks)-1 {
			components = approvalComponents
		} else if len(out.Choices) > 0 && i == len(chunks)-1 {
			components = choiceComponents(out.Choices) // a question's buttons (elicit.go)
		}
		nonce := ""
		if key != "" {
			nonce = partNonce(key, i)
		}
		ref, _, err := c.postWith(ctx, ch, chunk, reply, true, components, nonce)
		if err != nil {
			return last, fmt.Errorf("discord: post to %s (part %d of %d): %w", ch, i+1, len(chunks), err)
		}
		reply = nil
		last = ref
	}
	for _, emoji := range out.Reactions {
		if err := c.React(ctx, last, emoji); err != nil {
			c.log.Warn("discord: add reaction to prompt", "err", err, "emoji", emoji, "message", last.ID, "session", string(out.Session), "turn", out.Turn)
		}
	}
	return last, nil
}

// Edit replaces the text of a message the bot posted. Text longer than 2000 characters is cut
// (with "…"), since an edit cannot add messages. It blocks like Send.
func (c *Channel) Edit(ctx context.Context, ref echogate.MessageRef, text string) (err error) {
	defer c.recovered(&err, "edit")
	if ref.Channel == "" || ref.ID == "" {
		return fmt.Errorf("discord: edit: %w: MessageRef needs Channel and ID", ErrNoChannel)
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("discord: edit %s/%s: %w", ref.Channel, ref.ID, ErrEmptyMessage)
	}
	if _, err := c.edit(ctx, ref, truncateText(text, MaxMessageLength), true); err != nil {
		return fmt.Errorf("discord: edit %s/%s: %w", ref.Channel, ref.ID, err)
	}
	return nil
}

// truncateText cuts s to at most limit characters (textLen), ending with "…" when cut.
func truncateText(s string, limit int) string {
	if textLen(s) <= limit {
		return s
	}
	return cutAt(s, limit-1) + "…"
}

// React adds the bot's reaction emoji (unicode, e.g. echogate.ReactionApprove, or "name:id" for a
// custom emoji) to ref. It blocks until Discord accepted it or ctx ends.
func (c *Channel) React(ctx context.Context, ref echogate.MessageRef, emoji string) (err error) {
	defer c.recovered(&err, "react")
	if ref.Channel == "" || ref.ID == "" {
		return fmt.Errorf("discord: react: %w: MessageRef needs Channel and ID", ErrNoChannel)
	}
	if emoji == "" {
		return fmt.Errorf("discord: react to %s/%s: empty emoji", ref.Channel, ref.ID)
	}
	err = c.call(ctx, "react", true, func(opts ...discordgo.RequestOption) error {
		return c.sess.MessageReactionAdd(ref.Channel, ref.ID, emoji, opts...)
	})
	if err != nil {
		return fmt.Errorf("discord: react %s to %s/%s: %w", emoji, ref.Channel, ref.ID, err)
	}
	return nil
}

// Unreact removes the bot's reaction emoji from ref. Removing a reaction that is not there
// succeeds.
func (c *Channel) Unreact(ctx context.Context, ref echogate.MessageRef, emoji string) (err error) {
	defer c.recovered(&err, "unreact")
	if ref.Channel == "" || ref.ID == "" {
		return fmt.Errorf("discord: unreact: %w: MessageRef needs Channel and ID", ErrNoChannel)
	}
	err = c.call(ctx, "unreact", true, func(opts ...discordgo.RequestOption) error {
		return c.sess.MessageReactionRemove(ref.Channel, ref.ID, emoji, "@me", opts...)
	})
	if err != nil && restStatus(err) != http.StatusNotFound {
		return fmt.Errorf("discord: unreact %s from %s/%s: %w", emoji, ref.Channel, ref.ID, err)
	}
	return nil
}

// StartTyping shows the typing indicator in conv.Channel now and refreshes it every
// TypingInterval until stop is called, ctx ends or Run returns. Refreshes are best-effort: they
// are skipped when the channel's outbound budget has no spare token, and failures are only
// logged. stop is idempotent; Discord removes the indicator by itself when the bot posts or
// after about 10 s.
func (c *Channel) StartTyping(ctx context.Context, conv echogate.ConversationRef, _ echogate.MessageRef) (stop func()) {
	if conv.Channel == "" || c.life.Err() != nil {
		return func() {}
	}
	tctx, cancel := context.WithCancel(ctx)
	started := c.spawn(func() {
		defer cancel()
		for {
			if tctx.Err() != nil || c.life.Err() != nil {
				return
			}
			if c.budget.tryTake(conv.Channel) {
				err := c.call(tctx, "typing", false, func(opts ...discordgo.RequestOption) error {
					return c.sess.ChannelTyping(conv.Channel, opts...)
				})
				if err != nil && tctx.Err() == nil {
					c.log.Debug("discord: typing indicator", "err", err, "session", string(conv.SessionKey()))
				}
			}
			select {
			case <-tctx.Done():
				return
			case <-c.life.Done():
				return
			case <-c.clock.After(c.cfg.TypingInterval):
			}
		}
	})
	if !started {
		cancel()
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(cancel) }
}

// idSet is a bounded set of ids; the oldest are forgotten first.
type idSet struct {
	mu   sync.Mutex
	max  int
	ids  map[string]struct{}
	ring []string
	next int
}

// newIDSet makes a set of at most max ids. Its map and ring grow with the ids added: an idle
// channel does not hold storage for a bound it may never reach.
func newIDSet(max int) *idSet {
	return &idSet{max: max, ids: map[string]struct{}{}}
}

func (s *idSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return
	}
	if len(s.ring) < s.max {
		s.ring = append(s.ring, id)
	} else {
		delete(s.ids, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % s.max
	}
	s.ids[id] = struct{}{}
}

func (s *idSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ids[id]
	return ok
}
