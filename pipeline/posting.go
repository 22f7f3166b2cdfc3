package pipeline

import (
	"context"
	"time"

	"github.com/echogate/echogate"
)

// postingTimeout bounds the write of a streamed message's reference. The stream waits for it
// (the write is the durable record of what is on screen), so it stays short.
const postingTimeout = 5 * time.Second

// withContinued makes the turn's answer go into ref, the partial streamed message of a turn
// that died mid-stream, instead of a new message: recovery passes it when it answers the
// event again, so the user never sees the cut answer above the full one.
func withContinued(ref echogate.MessageRef) turnOption {
	return func(t *Turn) { t.cont = ref }
}

// openStream starts the turn's streamed message, of kind. A turn that continues a dead turn's
// message (Turn.cont) streams into that message, and records it as its own posting at once;
// any other turn records its message when the channel reports it created it
// (echogate.PostNotifier). Called with r.mu held or before any delta, by one goroutine.
func (r *responder) openStream(ctx context.Context, kind echogate.OutboundKind) (echogate.Stream, error) {
	out := r.outbound(kind, "")
	cont := !r.t.cont.IsZero() && !r.contUsed
	if cont {
		out.Continues = r.t.cont
	}
	s, err := r.str.StartStream(ctx, out)
	if err != nil {
		return nil, err
	}
	switch pn := postNotifierOf(s); {
	case cont:
		r.contUsed = true
		r.recordPosting(r.t.cont)
	case pn != nil:
		pn.OnPost(r.recordPosting)
	}
	return s, nil
}

// recordPosting makes ref, the message the turn's answer is streamed into, durable in the turn
// log before more of the answer is shown. It waits for the turn's record (the write-ahead of
// every post); a failure is logged: recovery then posts the answer anew.
func (r *responder) recordPosting(ref echogate.MessageRef) {
	t := r.t
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.streamCtx), postingTimeout)
	defer cancel()
	if err := t.w.Recorded(ctx); err != nil {
		t.log.Warn("pipeline: record the streamed message: the turn's record is not written", "err", err)
		return
	}
	if err := t.store.RecordPosting(ctx, t.id, ref); err != nil {
		t.log.Warn("pipeline: record the streamed message", "message", ref.ID, "err", err)
		return
	}
	t.log.Debug("streamed message recorded", "message", ref.ID)
}

// retire removes the dead turn's partial message when this turn's outcome went elsewhere (an
// approval prompt is a message of its own): it is finished empty, which the channels answer by
// deleting it.
func (r *responder) retire(ctx context.Context) {
	if r.t.cont.IsZero() || r.contUsed || r.str == nil {
		return
	}
	s, err := r.openStream(ctx, echogate.OutReply)
	if err == nil {
		_, err = s.Finish(ctx, "")
	}
	if err != nil {
		r.t.log.Warn("pipeline: remove the interrupted turn's partial message", "message", r.t.cont.ID, "err", err)
	}
}
