package slack

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// nativeUnsupported are chat.startStream codes meaning the workspace (or token) cannot stream
// natively; the channel then uses chat.update for good.
var nativeUnsupported = map[string]bool{
	"unknown_method": true, "not_allowed": true, "method_deprecated": true, "not_allowed_token_type": true,
	"feature_not_enabled": true, "not_supported": true, "missing_scope": true, "team_not_allowed": true,
	"method_not_supported_for_channel_type": true, "not_implemented": true,
}

// StartStream prepares a streamed reply to out and returns at once; nothing is posted until the
// first Append. Text is shown with Slack's native streaming (chat.startStream / appendStream /
// stopStream) when the reply goes in a thread and the workspace supports it, else as one posted
// message edited with chat.update, whose first text waits firstEditHold (200 ms by default) so
// that a reply finished by then is posted once, whole. Updates happen at most once per
// StreamUpdateInterval and only when the channel's budget has room beyond what finals need. The
// stream's background flusher ends with Finish or when ctx ends.
func (c *Channel) StartStream(ctx context.Context, out echogate.Outbound) (_ echogate.Stream, err error) {
	defer c.recovered(&err, "start stream")
	ch, thread, err := c.target(out)
	if err != nil {
		return nil, err
	}
	s := &stream{
		c: c, ctx: ctx, ch: ch, thread: thread, conv: out.Conversation, out: out,
		team:  out.Conversation.Workspace,
		dirty: make(chan struct{}, 1), stop: make(chan struct{}), flusherDone: make(chan struct{}),
	}
	if s.team == "" {
		s.team = c.identity().TeamID
	}
	if out.ReplyTo.ID != "" {
		s.recipient, _ = c.authors.Get(msgKey(out.ReplyTo.Channel, out.ReplyTo.ID))
	}
	s.native = !c.nativeOff.Load() && thread != "" && (s.recipient != "" || isDMChannel(ch))
	s.continueIn(out.Continues)
	if a, ok := c.acts.Load(msgKey(ch, thread)); ok && s.native {
		s.act = a.(*threadActivity)
		s.act.attach(s)
	}
	go s.flusher()
	return s, nil
}

type stream struct {
	c               *Channel
	ctx             context.Context
	ch, thread      string
	conv            echogate.ConversationRef
	out             echogate.Outbound // what the stream answers (its turn names the final message)
	team, recipient string
	act             *threadActivity // the turn's task cards; nil without

	mu       sync.Mutex
	text     strings.Builder
	finished bool
	onPost   func(echogate.MessageRef) // OnPost's hook, until the message is created

	dirty       chan struct{}
	stop        chan struct{}
	flusherDone chan struct{}

	// Owned by the flusher goroutine until it exits, then by Finish.
	native    bool
	ts        string // the visible message, once posted
	streamed  int    // bytes of the model's text sent natively
	sent      int    // bytes of markdown_text sent for them (escaped, see safeMarkdown)
	lastShown string // last text shown with chat.update
	lastFlush time.Time
	stale     bool // ts is a continued message whose native stream may be open (stopStale)
}

// Append adds delta to the reply. It never waits for the network: the flusher shows the text
// at the channel's bounded rate. It returns ErrStreamDone after Finish.
func (s *stream) Append(_ context.Context, delta string) (err error) {
	defer s.c.recovered(&err, "stream append")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return ErrStreamDone
	}
	if delta == "" {
		return nil
	}
	s.text.WriteString(delta)
	select {
	case s.dirty <- struct{}{}:
	default:
	}
	return nil
}

// poke makes the flusher run again (the task cards changed). It never blocks.
func (s *stream) poke() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

func (s *stream) snapshot() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// firstEditHold is how long an edited reply's first text waits before it is posted: an answer
// finished within it (a fast model's short answer, a command) is posted once, whole, by Finish,
// instead of as a partial message and an edit of it a moment later, which cost a second Web API
// call of the channel's budget and showed the first word alone. It is a fifth of the update
// interval, at most 200 ms; native streams start at once (a stream is their only message).
func firstEditHold(interval time.Duration) time.Duration {
	return min(interval/5, 200*time.Millisecond)
}

func (s *stream) flusher() {
	defer close(s.flusherDone)
	defer s.c.recovered(nil, "stream flush")
	interval := s.c.cfg.StreamUpdateInterval
	for {
		select {
		case <-s.stop:
			return
		case <-s.ctx.Done():
			return
		case <-s.dirty:
		}
		var wait time.Duration
		switch {
		case !s.lastFlush.IsZero():
			wait = s.lastFlush.Add(interval).Sub(s.c.cfg.Clock.Now())
		case !s.native:
			wait = firstEditHold(interval)
		}
		if wait > 0 {
			select {
			case <-s.stop:
				return // Finish shows the text (and posts it, when nothing was posted yet)
			case <-s.ctx.Done():
				return
			case <-s.c.cfg.Clock.After(wait):
			}
		}
		s.lastFlush = s.c.cfg.Clock.Now()
		if err := s.flush(); err != nil {
			if !errors.Is(err, errLowBudget) {
				s.c.log.Debug("slack stream update skipped", "slack_channel", s.ch, "error", err)
			}
			if _, ok := echogate.RetryAfter(err); ok || errors.Is(err, errLowBudget) {
				select { // try again after the interval
				case s.dirty <- struct{}{}:
				default:
				}
			}
		}
	}
}

// flush shows the text so far. Called by the flusher only.
func (s *stream) flush() error {
	full := s.snapshot()
	if strings.TrimSpace(full) == "" {
		return nil
	}
	if s.native {
		err := s.flushNative(full)
		if err == nil || !s.nativeFailed(err) {
			return err
		}
	}
	return s.flushEdit(full)
}

// nativeFailed decides whether a native streaming error moves this stream (and, for
// "unsupported" answers, the workspace) to chat.update. Called before the stream has a message.
func (s *stream) nativeFailed(err error) bool {
	if s.ts != "" {
		return false
	}
	code, ok := apiCode(err)
	if !ok {
		return false
	}
	if nativeUnsupported[code] {
		if !s.c.nativeOff.Swap(true) {
			s.c.log.Info("slack native streaming unavailable; using chat.update", "error", code)
		}
	}
	s.native = false
	return true
}

// cut returns the longest prefix of s of at most n bytes that ends on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (s *stream) flushNative(full string) error {
	c := s.c
	if s.ts == "" {
		piece, end := safeMarkdown(full, 0, maxStreamChunk)
		started := c.cfg.Clock.Now()
		var ts string
		tasks, commit := s.act.pending()
		err := c.call(s.ctx, "chat.startStream", s.ch, prioLow, func(ctx context.Context) error {
			opts := []slack.MsgOption{slack.MsgOptionTS(s.thread), streamText(piece, tasks)}
			if s.team != "" {
				opts = append(opts, slack.MsgOptionRecipientTeamID(s.team))
			}
			if s.recipient != "" {
				opts = append(opts, slack.MsgOptionRecipientUserID(s.recipient))
			}
			var err error
			_, ts, err = c.api.StartStreamContext(ctx, s.ch, opts...)
			return err
		})
		if err != nil {
			if _, api := apiCode(err); !api && !errors.Is(err, errLowBudget) {
				if _, ra := echogate.RetryAfter(err); !ra {
					// Ambiguous: the stream may have started. Adopt it if it did.
					if found, ok := c.findOwnSince(s.ctx, s.ch, s.thread, started); ok {
						s.ts, s.streamed, s.sent = found, end, len(piece)
						c.remember(s.ch, s.thread, found, s.conv)
						s.created(found)
						return nil
					}
				}
			}
			return err
		}
		s.ts, s.streamed, s.sent = ts, end, len(piece)
		commit()
		c.remember(s.ch, s.thread, ts, s.conv)
		s.created(ts)
		return nil
	}
	for {
		piece, end := "", s.streamed
		if s.streamed < len(full) && s.sent < maxStreamMessage {
			piece, end = safeMarkdown(full, s.streamed, min(maxStreamChunk, maxStreamMessage-s.sent))
		}
		tasks, commit := s.act.pending()
		if piece == "" && len(tasks) == 0 {
			return nil
		}
		err := c.call(s.ctx, "chat.appendStream", s.ch, prioLow, func(ctx context.Context) error {
			_, _, err := c.api.AppendStreamContext(ctx, s.ch, s.ts, streamText(piece, tasks))
			return err
		})
		if err != nil {
			return err
		}
		commit()
		s.streamed, s.sent = end, s.sent+len(piece)
	}
}

func (s *stream) flushEdit(full string) error {
	c := s.c
	msgs := render(full)
	if len(msgs) == 0 {
		return nil
	}
	m := msgs[0]
	if m.text == s.lastShown {
		return nil
	}
	if s.ts == "" {
		ts, err := c.post(s.ctx, s.ch, s.thread, m, prioLow)
		if err != nil {
			return err
		}
		s.ts, s.lastShown = ts, m.text
		c.remember(s.ch, s.thread, ts, s.conv)
		s.created(ts)
		return nil
	}
	s.stopStale(s.ctx)
	if err := c.update(s.ctx, s.ch, s.ts, m, prioLow); err != nil {
		return err
	}
	s.lastShown = m.text
	return nil
}

// findOwnSince looks for a message of the bot in the thread posted since t that the channel
// does not know yet: the result of a call whose answer was lost.
func (c *Channel) findOwnSince(ctx context.Context, ch, thread string, t time.Time) (string, bool) {
	self := c.identity()
	var found string
	err := c.call(ctx, "conversations.replies", ch, prioHigh, func(ctx context.Context) error {
		msgs, _, _, err := c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: ch, Timestamp: thread, Oldest: slackTS(t.Add(-5 * time.Second)), Limit: 200, Inclusive: true})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			own := (self.UserID != "" && m.User == self.UserID) || (self.BotID != "" && m.BotID == self.BotID)
			if _, known := c.sent.Get(msgKey(ch, m.Timestamp)); own && !known && m.Timestamp != thread {
				found = m.Timestamp
			}
		}
		return nil
	})
	return found, err == nil && found != ""
}
