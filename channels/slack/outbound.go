package slack

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
)

// message is one rendered Slack message: mrkdwn text and its section blocks.
type message struct {
	text   string
	blocks []slack.Block
	turn   string // on the last message of a turn's answer or prompt: "turn/kind" for its metadata (see FindReply)
}

// render converts Markdown to mrkdwn and splits it into messages within Slack's limits. Every
// message, edit and ephemeral answer is made here, so none carries a control sequence the
// model wrote (see noping.go).
func render(md string) []message {
	pieces := splitText(defuse(toMrkdwn(md)), maxMessageChars)
	out := make([]message, 0, len(pieces))
	for _, p := range pieces {
		out = append(out, renderPiece(p))
	}
	return out
}

func renderPiece(text string) message {
	m := message{text: text}
	secs := splitText(text, maxSectionChars)
	if len(secs) > maxBlocks {
		return m // text only; Slack renders it in full
	}
	for _, s := range secs {
		m.blocks = append(m.blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, s, false, true), nil, nil))
	}
	return m
}

// badBlocks are ok:false codes after which the message is re-posted as plain text.
var badBlocks = map[string]bool{"invalid_blocks": true, "invalid_blocks_format": true, "msg_blocks_too_long": true, "too_many_blocks": true}

// slackTS formats t as a Slack timestamp for oldest/latest parameters.
func slackTS(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10) + "." + fmt.Sprintf("%06d", t.Nanosecond()/1000)
}

// post posts one message exactly once. Every attempt carries the same reply id in the message
// metadata; after an ambiguous failure (timeout, reset, 5xx) the thread or channel is searched
// for that id before anything is re-sent, and when the search cannot answer the post is not
// repeated (ErrUncertainDelivery). A 429 means not posted: wait Retry-After and retry.
func (c *Channel) post(ctx context.Context, ch, thread string, m message, prio priority) (string, error) {
	replyID := ids.New("r_")
	started := c.cfg.Clock.Now()
	bo := backoff{initial: time.Second, max: 8 * time.Second}
	blocks := m.blocks
	var last error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if err := c.acquire(ctx, ch, prio); err != nil {
			return "", err
		}
		opts := []slack.MsgOption{
			slack.MsgOptionText(m.text, false),
			slack.MsgOptionDisableLinkUnfurl(),
			slack.MsgOptionMetadata(replyMetadata(replyID, m.turn)),
		}
		if thread != "" {
			opts = append(opts, slack.MsgOptionTS(thread))
		}
		if len(blocks) > 0 {
			opts = append(opts, slack.MsgOptionBlocks(blocks...))
		}
		cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		_, ts, err := c.api.PostMessageContext(cctx, ch, opts...)
		cancel()
		if err == nil {
			return ts, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("slack: chat.postMessage to %s: %w", ch, ctx.Err())
		}
		last = err
		if ra, ok := retryAfterOf(err); ok {
			c.budgets.block(ch, ra)
			c.log.Warn("slack rate limited", "method", "chat.postMessage", "slack_channel", ch, "retry_after", ra)
			if prio == prioLow {
				return "", fmt.Errorf("slack: chat.postMessage to %s: %w", ch, &echogate.RetryAfterError{After: ra, Err: err})
			}
			continue // not posted: the budget waits out Retry-After
		}
		if code, ok := apiCode(err); ok {
			c.logAPIError("chat.postMessage", ch, err)
			if badBlocks[code] && len(blocks) > 0 {
				blocks = nil // fall back to plain mrkdwn text
				continue
			}
			return "", fmt.Errorf("slack: chat.postMessage to %s: %w", ch, &APIError{Method: "chat.postMessage", Code: code})
		}
		// Ambiguous: the post may have landed. Look for it before any retry.
		wait := bo.next()
		c.log.Warn("slack post failed ambiguously; checking whether it landed before retrying", "slack_channel", ch, "error", err, "check_in", wait)
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("slack: chat.postMessage to %s: %w", ch, ctx.Err())
		case <-c.cfg.Clock.After(wait):
		}
		ts, found, lerr := c.findReply(ctx, ch, thread, replyID, started)
		if lerr != nil {
			return "", fmt.Errorf("slack: chat.postMessage to %s: %w (post failed: %v; lookup failed: %v)", ch, ErrUncertainDelivery, err, lerr)
		}
		if found {
			c.log.Info("slack post had landed despite the error; not re-sending", "slack_channel", ch, "ts", ts)
			return ts, nil
		}
	}
	return "", fmt.Errorf("slack: chat.postMessage to %s: giving up after %d attempts: %w", ch, maxAttempts, last)
}

// findReply searches the thread (or the channel's recent history) for our post with replyID.
func (c *Channel) findReply(ctx context.Context, ch, thread, replyID string, since time.Time) (string, bool, error) {
	oldest := slackTS(since.Add(-5 * time.Minute)) // margin for clock skew
	match := func(msgs []slack.Message) (string, bool) {
		for _, m := range msgs {
			if m.Metadata.EventType == "echogate_reply" && fmt.Sprint(m.Metadata.EventPayload["reply_id"]) == replyID {
				return m.Timestamp, true
			}
		}
		return "", false
	}
	var ts string
	var found bool
	err := c.call(ctx, "conversations lookup", ch, prioHigh, func(ctx context.Context) error {
		if thread != "" {
			msgs, _, _, err := c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: ch, Timestamp: thread, Oldest: oldest, Limit: 200, Inclusive: true, IncludeAllMetadata: true})
			if code, ok := apiCode(err); ok && code == "thread_not_found" {
				return nil // no thread, so our reply is not in it
			}
			if err != nil {
				return err
			}
			ts, found = match(msgs)
			return nil
		}
		h, err := c.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: ch, Oldest: oldest, Limit: 200, Inclusive: true, IncludeAllMetadata: true})
		if err != nil {
			return err
		}
		ts, found = match(h.Messages)
		return nil
	})
	return ts, found, err
}

// target returns where a reply to out goes: its channel and thread.
func (c *Channel) target(out echogate.Outbound) (string, string, error) {
	ch := out.Conversation.Channel
	if ch == "" {
		ch = out.ReplyTo.Channel
	}
	if ch == "" {
		return "", "", errors.New("slack: send: outbound has no channel (set Outbound.Conversation.Channel)")
	}
	thread := out.Conversation.Thread
	if thread == "" && !out.Conversation.DM && !isDMChannel(ch) && c.cfg.replyInThread() && out.ReplyTo.ID != "" {
		thread = out.ReplyTo.ID
	}
	return ch, thread, nil
}

// remember records a posted message's session (for reactions) and thread (for follow-ups).
func (c *Channel) remember(ch, thread, ts string, conv echogate.ConversationRef) {
	if conv.Platform == "" {
		conv.Platform = echogate.PlatformSlack
	}
	if conv.Channel == "" {
		conv.Channel = ch
	}
	if conv.Thread == "" && thread != "" && !conv.DM {
		conv.Thread = thread
	}
	c.sent.Add(msgKey(ch, ts), conv)
	if thread != "" {
		c.threads.Add(msgKey(ch, thread), true)
	}
}

// Send posts out (split into several messages when it exceeds Slack's limits) and returns the
// reference of the message that carries out.Reactions (the last) or, without reactions, the
// first. It blocks until Slack accepted every part, honouring the channel's budget and 429s, or
// ctx ends. Approval-prompt reactions are added after posting; failing to add one is logged,
// not returned (the text fallback still works). Errors wrap *APIError for ok:false and
// ErrUncertainDelivery when a post could not be confirmed.
func (c *Channel) Send(ctx context.Context, out echogate.Outbound) (_ echogate.MessageRef, err error) {
	defer c.recovered(&err, "send")
	if out.Interaction != "" {
		return c.respondPrivately(ctx, out.Interaction, out.Text)
	}
	if out.PrivateTo != "" {
		return c.postPrivately(ctx, out)
	}
	ch, thread, err := c.target(out)
	if err != nil {
		return echogate.MessageRef{}, err
	}
	msgs := render(out.Text)
	if out.Kind == echogate.OutApprovalPrompt {
		msgs = withButtons(msgs)
	}
	msgs = withChoices(msgs, out.Choices) // a question's buttons (elicit.go)
	refs, err := c.postAll(ctx, ch, thread, markFinal(msgs, out), out.Conversation)
	if err != nil {
		return firstRef(refs), err
	}
	if len(refs) == 0 {
		return echogate.MessageRef{}, fmt.Errorf("slack: send to %s: empty text", ch)
	}
	ref := refs[0]
	if len(out.Reactions) > 0 {
		ref = refs[len(refs)-1]
		for _, e := range out.Reactions {
			if err := c.React(ctx, ref, e); err != nil {
				c.log.Warn("slack approval reaction not added", "slack_channel", ch, "emoji", e, "error", err)
			}
		}
	}
	return ref, nil
}

func firstRef(refs []echogate.MessageRef) echogate.MessageRef {
	if len(refs) > 0 {
		return refs[0]
	}
	return echogate.MessageRef{}
}

func (c *Channel) postAll(ctx context.Context, ch, thread string, msgs []message, conv echogate.ConversationRef) ([]echogate.MessageRef, error) {
	refs := make([]echogate.MessageRef, 0, len(msgs))
	for _, m := range msgs {
		ts, err := c.post(ctx, ch, thread, m, prioHigh)
		if err != nil {
			return refs, err
		}
		c.remember(ch, thread, ts, conv)
		refs = append(refs, echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: ch, ID: ts})
	}
	return refs, nil
}

// Edit replaces the text of a message the bot posted (chat.update). Text beyond one message is
// cut at Slack's limit with a note. It blocks until Slack accepted the edit or ctx ends.
func (c *Channel) Edit(ctx context.Context, ref echogate.MessageRef, text string) (err error) {
	defer c.recovered(&err, "edit")
	msgs := render(text)
	if len(msgs) == 0 {
		return fmt.Errorf("slack: edit %s in %s: empty text", ref.ID, ref.Channel)
	}
	m := msgs[0]
	if len(msgs) > 1 {
		m = renderPiece(m.text + "\n_…(truncated)_")
	}
	return c.update(ctx, ref.Channel, ref.ID, m, prioHigh)
}

func (c *Channel) update(ctx context.Context, ch, ts string, m message, prio priority) error {
	blocks := m.blocks
	for {
		opts := []slack.MsgOption{slack.MsgOptionText(m.text, false)}
		if m.turn != "" {
			opts = append(opts, slack.MsgOptionMetadata(replyMetadata("", m.turn)))
		}
		if len(blocks) > 0 {
			opts = append(opts, slack.MsgOptionBlocks(blocks...))
		} else {
			opts = append(opts, slack.MsgOptionBlocks()) // clear blocks of an earlier version
		}
		err := c.call(ctx, "chat.update", ch, prio, func(ctx context.Context) error {
			_, _, _, err := c.api.UpdateMessageContext(ctx, ch, ts, opts...)
			return err
		})
		if code, ok := apiCode(err); ok && badBlocks[code] && len(blocks) > 0 {
			blocks = nil
			continue
		}
		return err
	}
}

// React adds the bot's reaction (a canonical emoji such as echogate.ReactionApprove, or a Slack
// name like ":eyes:") to a message. Adding a reaction that is already there is not an error.
func (c *Channel) React(ctx context.Context, ref echogate.MessageRef, emoji string) (err error) {
	defer c.recovered(&err, "react")
	return c.reaction(ctx, ref, emoji, true, prioHigh)
}

// Unreact removes the bot's reaction; removing one that is not there is not an error.
func (c *Channel) Unreact(ctx context.Context, ref echogate.MessageRef, emoji string) (err error) {
	defer c.recovered(&err, "unreact")
	return c.reaction(ctx, ref, emoji, false, prioHigh)
}

func (c *Channel) reaction(ctx context.Context, ref echogate.MessageRef, emoji string, add bool, prio priority) error {
	name, ok := slackEmojiName(emoji)
	if !ok {
		return fmt.Errorf("slack: reaction %q on %s: %w (use echogate.Reaction* or a Slack name like :eyes:)", emoji, ref.ID, ErrUnknownEmoji)
	}
	method := "reactions.add"
	if !add {
		method = "reactions.remove"
	}
	item := slack.NewRefToMessage(ref.Channel, ref.ID)
	err := c.call(ctx, method, ref.Channel, prio, func(ctx context.Context) error {
		if add {
			return c.api.AddReactionContext(ctx, name, item)
		}
		return c.api.RemoveReactionContext(ctx, name, item)
	})
	if code, ok := apiCode(err); ok && (code == "already_reacted" || code == "no_reaction") {
		return nil
	}
	return err
}
