package discord

import (
	"context"
	"errors"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// A stream continues a message when its Outbound names one (Continues): the partial answer of
// a turn that died mid-stream. That message becomes the stream's first part, edited into the
// new text, so the cut text never stays above the full answer. When Discord refuses the edit
// (the message was deleted, or is not the bot's any more), Finish deletes the stream's
// messages and posts the answer anew.

// continueIn makes ref the stream's first posted part. A ref of another channel is ignored:
// the answer is then a new message.
func (s *stream) continueIn(ref echogate.MessageRef) {
	if ref.IsZero() || ref.Channel != s.channel {
		return
	}
	// An empty content differs from every part, so the first sync edits it.
	s.posted = []streamMsg{{ref: ref}}
	s.continued = true
}

// OnPost implements echogate.PostNotifier: fn is called with the stream's first message right
// after Discord created it, before more text is shown.
func (s *stream) OnPost(fn func(echogate.MessageRef)) {
	s.mu.Lock()
	s.onPost = fn
	s.mu.Unlock()
}

// created reports the stream's first message to the OnPost hook. Called by the active syncer.
func (s *stream) created(ref echogate.MessageRef) {
	s.mu.Lock()
	fn := s.onPost
	s.onPost = nil
	s.mu.Unlock()
	if fn != nil {
		fn(ref)
	}
}

// finishAnew handles a final sync of a continued stream that Discord refused: the stream's
// messages are deleted and the answer posted as new messages.
func (s *stream) finishAnew(ctx context.Context, final string, err error) error {
	if !s.continued || !refused(err) {
		return err
	}
	s.continued = false
	s.c.log.Warn("discord: the interrupted turn's message cannot be edited; posting the answer anew", "err", err,
		"session", s.session, "turn", s.turn)
	s.dropPosted(ctx)
	_, err = s.sync(ctx, final, true)
	return err
}

// dropPosted deletes the stream's posted messages (best effort) and forgets them.
func (s *stream) dropPosted(ctx context.Context) {
	for _, p := range s.posted {
		if err := s.c.deleteMessage(ctx, p.ref); err != nil {
			s.c.log.Warn("discord: delete streamed message", "err", err, "message", p.ref.ID, "session", s.session, "turn", s.turn)
		}
	}
	s.posted = nil
}

// refused reports whether err is Discord refusing the request for good (a 4xx other than a
// rate limit), not a failure a retry could get past.
func refused(err error) bool {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	code := re.Response.StatusCode
	return code >= 400 && code < 500 && code != http.StatusTooManyRequests
}
