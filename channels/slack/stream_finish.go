package slack

import (
	"context"
	"strings"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// Finish shows final, the whole answer, exactly once and returns the messages that hold it. A
// native stream is completed with chat.stopStream (rewritten with chat.update when final is not
// what was streamed); an edited message gets the final text; parts beyond Slack's per-message
// limit follow in the same thread. It blocks until done or ctx ends. An empty final means
// "what was appended". Calls after the first return ErrStreamDone.
func (s *stream) Finish(ctx context.Context, final string) (_ []echogate.MessageRef, err error) {
	defer s.c.recovered(&err, "stream finish")
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return nil, ErrStreamDone
	}
	s.finished = true
	s.mu.Unlock()
	close(s.stop)
	<-s.flusherDone
	s.stopStale(ctx)

	c := s.c
	if strings.TrimSpace(final) == "" {
		final = s.snapshot()
	}
	if strings.TrimSpace(final) == "" {
		if s.ts != "" {
			s.stopNative(ctx, "")
			_ = c.call(ctx, "chat.delete", s.ch, prioHigh, func(ctx context.Context) error {
				_, _, err := c.api.DeleteMessageContext(ctx, s.ch, s.ts)
				return err
			})
		}
		return nil, nil
	}
	if s.native && s.ts != "" {
		streamed := s.snapshot()[:s.streamed]
		if rest, _ := safeMarkdown(final, s.streamed, -1); strings.HasPrefix(final, streamed) && s.sent+len(rest) <= maxStreamMessage {
			if err := s.finishNative(ctx, final); err == nil {
				return []echogate.MessageRef{s.ref(s.ts)}, nil
			} else {
				c.log.Warn("slack native stream could not be completed; rewriting the message", "slack_channel", s.ch, "error", err)
			}
		} else {
			s.stopNative(ctx, "")
		}
	}
	return s.finishEdit(ctx, final)
}

func (s *stream) ref(ts string) echogate.MessageRef {
	return echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: s.ch, ID: ts}
}

// finishNative appends what final has beyond the text streamed so far and stops the stream.
func (s *stream) finishNative(ctx context.Context, final string) error {
	c := s.c
	for {
		piece, end := safeMarkdown(final, s.streamed, maxStreamChunk)
		if end >= len(final) {
			return s.stopNative(ctx, piece)
		}
		err := c.call(ctx, "chat.appendStream", s.ch, prioHigh, func(ctx context.Context) error {
			_, _, err := c.api.AppendStreamContext(ctx, s.ch, s.ts, slack.MsgOptionMarkdownText(piece))
			return err
		})
		if err != nil {
			return err
		}
		s.streamed, s.sent = end, s.sent+len(piece)
	}
}

// stopNative stops the native stream, with text (escaped by safeMarkdown) as its last piece.
func (s *stream) stopNative(ctx context.Context, text string) error {
	if !s.native || s.ts == "" {
		return nil
	}
	c := s.c
	tasks, commit := s.act.pending() // the final state of every task card
	err := c.call(ctx, "chat.stopStream", s.ch, prioHigh, func(ctx context.Context) error {
		var opts []slack.MsgOption
		if text != "" || len(tasks) > 0 {
			opts = append(opts, streamText(text, tasks))
		}
		if turn := finalTurn(s.out); turn != "" {
			opts = append(opts, slack.MsgOptionMetadata(replyMetadata("", turn)))
		}
		_, _, err := c.api.StopStreamContext(ctx, s.ch, s.ts, opts...)
		return err
	})
	if err == nil {
		commit()
	}
	return err
}

// finishEdit puts final into the visible message (or posts it when there is none) and posts
// any further parts in the thread.
func (s *stream) finishEdit(ctx context.Context, final string) ([]echogate.MessageRef, error) {
	c := s.c
	msgs := markFinal(render(final), s.out)
	if s.ts == "" {
		return c.postAll(ctx, s.ch, s.thread, msgs, s.conv)
	}
	if err := c.update(ctx, s.ch, s.ts, msgs[0], prioHigh); err != nil {
		if _, api := apiCode(err); !api {
			return nil, err
		}
		// The partial message cannot be edited (deleted, too old…): post the answer anew and
		// remove the partial one.
		c.log.Warn("slack streamed message not editable; posting the answer as a new message", "slack_channel", s.ch, "error", err)
		_ = c.call(ctx, "chat.delete", s.ch, prioHigh, func(ctx context.Context) error {
			_, _, err := c.api.DeleteMessageContext(ctx, s.ch, s.ts)
			return err
		})
		return c.postAll(ctx, s.ch, s.thread, msgs, s.conv)
	}
	refs := []echogate.MessageRef{s.ref(s.ts)}
	more, err := c.postAll(ctx, s.ch, s.thread, msgs[1:], s.conv)
	return append(refs, more...), err
}
