package slack

import (
	"context"

	"github.com/echogate/echogate"
)

// A stream continues a message when its Outbound names one (Continues): the partial answer of
// a turn that died mid-stream. The new answer is shown by editing that message (chat.update),
// so the cut text never stays above the full answer. The dead turn's native stream may still
// be open: it is stopped first (an error, e.g. message_not_in_streaming_state, only means it
// was not). When the message cannot be edited, finishEdit deletes it and posts the answer
// anew, as for any streamed message.

// continueIn makes the stream show its text in ref's message. A ref of another channel is
// ignored: the answer is then a new message.
func (s *stream) continueIn(ref echogate.MessageRef) {
	if ref.IsZero() || ref.Channel != s.ch {
		return
	}
	s.ts, s.native, s.stale = ref.ID, false, true
	s.c.remember(s.ch, s.thread, ref.ID, s.conv)
}

// stopStale stops the continued message's native stream, once, before it is edited. Called
// by the goroutine owning ts (the flusher, then Finish).
func (s *stream) stopStale(ctx context.Context) {
	if !s.stale {
		return
	}
	s.stale = false
	c := s.c
	err := c.call(ctx, "chat.stopStream", s.ch, prioHigh, func(ctx context.Context) error {
		_, _, err := c.api.StopStreamContext(ctx, s.ch, s.ts)
		return err
	})
	if err != nil {
		c.log.Debug("slack: stop the interrupted stream before continuing it", "slack_channel", s.ch, "ts", s.ts, "error", err)
	}
}

// OnPost implements echogate.PostNotifier: fn is called with the stream's message right after
// Slack created it (chat.startStream or chat.postMessage), before more text is shown.
func (s *stream) OnPost(fn func(echogate.MessageRef)) {
	s.mu.Lock()
	s.onPost = fn
	s.mu.Unlock()
}

// created reports the stream's new message to the OnPost hook. Called by the flusher.
func (s *stream) created(ts string) {
	s.mu.Lock()
	fn := s.onPost
	s.onPost = nil
	s.mu.Unlock()
	if fn != nil {
		fn(s.ref(ts))
	}
}
