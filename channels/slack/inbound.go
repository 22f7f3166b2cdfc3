package slack

import (
	"context"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/internal/lazyre"
)

// reactionNames maps Slack reaction names to canonical emoji. Other reactions are ignored.
var reactionNames = map[string]string{
	"white_check_mark":            echogate.ReactionApprove,
	"heavy_check_mark":            echogate.ReactionApprove,
	"ballot_box_with_check":       echogate.ReactionApprove,
	"repeat":                      echogate.ReactionApproveSession,
	"x":                           echogate.ReactionDeny,
	"negative_squared_cross_mark": echogate.ReactionDeny,
	"octagonal_sign":              echogate.ReactionStop,
	"stop_sign":                   echogate.ReactionStop,
}

// emojiNames maps canonical emoji to the Slack names the bot reacts with.
var emojiNames = map[string]string{
	echogate.ReactionApprove:        "white_check_mark",
	echogate.ReactionApproveSession: "repeat",
	echogate.ReactionDeny:           "x",
	echogate.ReactionStop:           "octagonal_sign",
	echogate.ReactionWorking:        "eyes",
}

// canonicalReaction maps a Slack reaction name ("white_check_mark", "+1::skin-tone-2") to a
// canonical emoji; ok is false for reactions the gateway does not act on.
func canonicalReaction(name string) (string, bool) {
	if i := strings.Index(name, "::"); i >= 0 { // skin tone suffix
		name = name[:i]
	}
	e, ok := reactionNames[name]
	return e, ok
}

// slackEmojiName maps a canonical emoji (or a ":name:" / "name") to a Slack reaction name.
func slackEmojiName(emoji string) (string, bool) {
	if n, ok := emojiNames[emoji]; ok {
		return n, true
	}
	n := strings.Trim(emoji, ":")
	if n != "" && isEmojiName(n) {
		return n, true
	}
	return "", false
}

func isEmojiName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '+' || r == '\'') {
			return false
		}
	}
	return true
}

var reMention = lazyre.New(`<@([UW][A-Z0-9]+)(?:\|[^>]*)?>`)

// keepLines removes the bot's mention markup, unescapes Slack's &amp; &lt; &gt; and trims
// trailing spaces, keeping line breaks (for multi-line prompts and code).
func keepLines(text, botUser string) string {
	if botUser != "" {
		text = reMention.ReplaceAllStringFunc(text, func(m string) string {
			if reMention.FindStringSubmatch(m)[1] == botUser {
				return ""
			}
			return m
		})
	}
	lines := strings.Split(slackUnescape(text), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func mentions(text, user string) bool {
	if user == "" {
		return false
	}
	for _, m := range reMention.FindAllStringSubmatch(text, -1) {
		if m[1] == user {
			return true
		}
	}
	return false
}

// isDMChannel reports whether a channel id is a one-to-one IM (D…).
func isDMChannel(ch string) bool { return strings.HasPrefix(ch, "D") }

func msgKey(ch, ts string) string { return ch + ":" + ts }

// channelOf returns the Slack channel of an inner event, for ordering and budgets.
func channelOf(inner any) string {
	switch e := inner.(type) {
	case *slackevents.AppMentionEvent:
		return e.Channel
	case *slackevents.MessageEvent:
		return e.Channel
	case *slackevents.ReactionAddedEvent:
		return e.Item.Channel
	case *buttonPress:
		return e.channel
	case *slashCommand:
		return e.channel
	case *slackevents.AssistantThreadStartedEvent:
		return e.AssistantThread.ChannelID
	case *slackevents.AgentSessionStoppedEvent:
		return e.Channel
	case *slackevents.AppHomeOpenedEvent:
		return e.Channel
	}
	return ""
}

// conversation builds the session of a post: a thread is one session; a top-level mention in a
// channel starts a thread (when replies go in threads); a DM without a thread is one session.
func (c *Channel) conversation(team, ch, ts, threadTS string, dm bool) echogate.ConversationRef {
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: team, Channel: ch, DM: dm, Thread: threadTS}
	if conv.Thread == "" && !dm && c.cfg.replyInThread() {
		conv.Thread = ts
	}
	return conv
}

// handle turns one event into at most one InboundEvent for the sink. A Socket Mode event is
// acknowledged after the sink took it (the pipeline records it durably first) or when it is no
// turn; one the sink refused stays unacknowledged, for Slack to redeliver.
func (c *Channel) handle(ctx context.Context, j job, sink channels.Sink) {
	refused := false
	defer func() {
		if j.wait != nil {
			j.wait.settle(!refused)
		}
		if j.ack == nil {
			return
		}
		if !refused {
			j.ack()
		}
		if j.eventID != "" {
			c.handled(j.eventID, !refused)
		}
	}()
	ev, ok := c.normalize(ctx, j)
	if !ok {
		return
	}
	log := c.log.With("event_id", ev.ID, "session", string(ev.SessionKey()))
	if !c.recent.AddIfAbsent("m:"+ev.ID, struct{}{}) {
		log.Debug("slack post already delivered (message/app_mention pair or retry)")
		return
	}
	// A refused person costs no Web API call: no thread read, no name, no title. The sink
	// still gets the event, to record the refusal (and answer it, at most once an hour).
	admitted := c.admits(ev)
	if admitted && (ev.Kind == echogate.KindMention || ev.Kind == echogate.KindDirect) && ev.Interaction == "" {
		if tc := c.threadContext(ctx, ev); len(tc) > 0 {
			ev.ThreadContext = tc
			ev.Actor.Name = c.userName(ctx, ev.Actor.ID)
		}
	}
	if admitted && ev.Actor.Name == "" {
		ev.Actor.Name = c.cachedName(ev.Actor.ID)
	}
	if j.wait != nil && !j.wait.claim() {
		// Its HTTP request gave up waiting and told Slack it failed: do not apply it now.
		refused = true
		c.recent.Remove("m:" + ev.ID)
		log.Warn("slack interaction dropped: its request was answered as failed before a worker took it")
		return
	}
	if err := sink(ctx, ev); err != nil {
		// Forget the ids so a redelivery can try again, and tell the user the post was not taken.
		refused = true // not acknowledged: Slack redelivers
		c.recent.Remove("m:" + ev.ID)
		if j.eventID != "" {
			c.recent.Remove("e:" + j.eventID)
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("slack event not accepted by the pipeline", "error", err, "kind", ev.Kind.String())
		if ev.Kind == echogate.KindDirect || ev.Kind == echogate.KindMention {
			out := echogate.Outbound{Kind: echogate.OutNotice, Conversation: ev.Conversation, ReplyTo: ev.Message,
				Text: "Sorry, I'm too busy to take this message right now. Please try again in a minute.", Interaction: ev.Interaction}
			if _, err := c.Send(ctx, out); err != nil {
				log.Warn("slack busy notice failed", "error", err)
			}
		}
		return
	}
	log.Debug("slack event delivered", "kind", ev.Kind.String(), "transport", j.transport, "retry", j.retry)
	if admitted && ev.Kind == echogate.KindDirect && ev.Interaction == "" {
		c.titleThread(ctx, ev)
	}
}

// normalize maps a Slack event to an InboundEvent, or reports false for events that are not
// turns (own or bot messages, edits, joins, room chatter, reactions elsewhere).
func (c *Channel) normalize(ctx context.Context, j job) (echogate.InboundEvent, bool) {
	self := c.identity()
	now := c.cfg.Clock.Now()
	team := j.teamID
	if team == "" {
		team = self.TeamID
	}
	switch e := j.inner.(type) {
	case *buttonPress:
		return c.normalizeButton(ctx, team, e)
	case *slashCommand:
		return c.normalizeCommand(team, e)
	case *slackevents.AssistantThreadStartedEvent:
		if c.admits(dmProbe(team, e.AssistantThread.ChannelID, e.AssistantThread.UserID)) {
			c.suggestPrompts(ctx, e.AssistantThread.ChannelID, e.AssistantThread.ThreadTimeStamp)
		}
		return echogate.InboundEvent{}, false
	case *slackevents.AgentSessionStoppedEvent:
		return c.normalizeAgentStop(team, e, j.eventID)
	case *slackevents.AppHomeOpenedEvent:
		if c.admits(dmProbe(team, e.Channel, e.User)) {
			c.appHomeOpened(ctx, e)
		}
		return echogate.InboundEvent{}, false
	case *slackevents.AppMentionEvent:
		return c.normalizeMention(team, e, self, now)
	case *slackevents.MessageEvent:
		return c.normalizeMessage(ctx, team, e, self, now)
	case *slackevents.ReactionAddedEvent:
		return c.normalizeReaction(ctx, team, e, j.eventID, self, now)
	}
	return echogate.InboundEvent{}, false
}

// normalizeMention makes a turn of an app_mention (a direct one in a DM), unless it is the bot's
// own, a bot's, an edit, or lacks the ids an answer needs.
func (c *Channel) normalizeMention(team string, e *slackevents.AppMentionEvent, self identity, now time.Time) (echogate.InboundEvent, bool) {
	if e.BotID != "" || e.User == "" || e.User == self.UserID || e.Edited != nil || e.Channel == "" || e.TimeStamp == "" {
		return echogate.InboundEvent{}, false
	}
	dm := isDMChannel(e.Channel)
	kind := echogate.KindMention
	if dm {
		kind = echogate.KindDirect
	}
	ev := c.postEvent(team, e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.User, e.Text, dm, kind, self, now)
	ev.Actor.Team = e.UserTeam
	ev.Attachments = attachments(e.Files)
	return ev, true
}

// normalizeMessage makes a turn of a message event: a DM, a post that mentions the bot, or a
// reply in a thread the bot is in where mentions are not required. Edits, deletes, joins, bots'
// posts and other subtypes are not turns.
func (c *Channel) normalizeMessage(ctx context.Context, team string, e *slackevents.MessageEvent, self identity, now time.Time) (echogate.InboundEvent, bool) {
	switch e.SubType {
	case "", "file_share", "thread_broadcast":
	default: // edits, deletes, joins, bot_message, channel topics…: not turns
		return echogate.InboundEvent{}, false
	}
	if e.BotID != "" || e.User == "" || e.User == self.UserID || e.Channel == "" || e.TimeStamp == "" {
		return echogate.InboundEvent{}, false // no id can be built, nor an answer addressed
	}
	var ev echogate.InboundEvent
	switch {
	case e.ChannelType == slackevents.ChannelTypeIM || (e.ChannelType == "" && isDMChannel(e.Channel)):
		ev = c.postEvent(team, e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.User, e.Text, true, echogate.KindDirect, self, now)
	case mentions(e.Text, self.UserID):
		// The app_mention event for this post carries the same id; whichever comes first wins.
		ev = c.postEvent(team, e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.User, e.Text, false, echogate.KindMention, self, now)
	case e.ThreadTimeStamp != "" && e.ThreadTimeStamp != e.TimeStamp && !c.cfg.requireMention(e.Channel):
		// Only an admitted person's post is worth a read to learn whether the bot is in
		// the thread; a refused one's counts as addressed only when that is known already.
		read := c.admits(probe(echogate.KindMention, team, e.Channel, e.User, e.UserTeam))
		if !c.botInThread(ctx, e.Channel, e.ThreadTimeStamp, read) {
			return echogate.InboundEvent{}, false
		}
		ev = c.postEvent(team, e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.User, e.Text, false, echogate.KindMention, self, now)
	default:
		return echogate.InboundEvent{}, false
	}
	ev.Actor.Team = e.UserTeam
	if e.Message != nil {
		ev.Attachments = attachments(e.Message.Files)
	}
	return ev, true
}

// normalizeReaction makes an event of a known reaction added by a person to one of the bot's
// messages in a conversation it can place; eventID is the envelope's (one is derived without it).
func (c *Channel) normalizeReaction(ctx context.Context, team string, e *slackevents.ReactionAddedEvent, eventID string, self identity, now time.Time) (echogate.InboundEvent, bool) {
	if e.Item.Type != "message" || e.ItemUser == "" || e.ItemUser != self.UserID || e.User == self.UserID || e.User == "" {
		return echogate.InboundEvent{}, false
	}
	emoji, ok := canonicalReaction(e.Reaction)
	if !ok {
		return echogate.InboundEvent{}, false
	}
	conv, ok := c.conversationOf(ctx, team, e.Item.Channel, e.Item.Timestamp,
		c.admits(probe(echogate.KindReaction, team, e.Item.Channel, e.User, "")))
	if !ok {
		return echogate.InboundEvent{}, false
	}
	id := eventID
	if id == "" {
		id = "reaction:" + e.Item.Channel + ":" + e.Item.Timestamp + ":" + e.User + ":" + e.Reaction + ":" + e.EventTimestamp
	}
	target := echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: e.Item.Channel, ID: e.Item.Timestamp}
	return echogate.InboundEvent{
		ID: id, Kind: echogate.KindReaction, Conversation: conv,
		Actor: echogate.Actor{ID: e.User}, Reaction: emoji, Target: target, Message: target, ReceivedAt: now,
	}, true
}

func (c *Channel) postEvent(team, ch, ts, threadTS, user, text string, dm bool, kind echogate.EventKind, self identity, now time.Time) echogate.InboundEvent {
	c.authors.Add(msgKey(ch, ts), user)
	conv := c.conversation(team, ch, ts, threadTS, dm)
	c.lastThread.Add(msgKey(ch, user), conv.Thread)
	return echogate.InboundEvent{
		ID:           msgKey(ch, ts),
		Kind:         kind,
		Conversation: conv,
		Actor:        echogate.Actor{ID: user},
		Text:         keepLines(text, self.UserID),
		Message:      echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: ch, ID: ts},
		ReceivedAt:   now,
	}
}

func attachments(files []slack.File) []echogate.Attachment {
	if len(files) == 0 {
		return nil
	}
	out := make([]echogate.Attachment, 0, len(files))
	for _, f := range files {
		u := f.URLPrivateDownload
		if u == "" {
			u = f.URLPrivate
		}
		out = append(out, echogate.Attachment{ID: f.ID, Name: f.Name, MIME: f.Mimetype, Size: int64(f.Size), URL: u})
	}
	return out
}
