package pipeline

import (
	"context"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/redact"
)

// Redaction of outbound text: every replier the pipeline posts through is wrapped once (New), so
// final posts, edits, notices, approval prompts, plans, streamed deltas and turn events all pass
// the Redactor whichever path sends them. Streams and the observer's delta events go through a
// redact.Stream, which holds back a possible secret's start until the next delta shows whether
// it is one: a token split over two deltas is still masked.

// redactRepliers returns a copy of reps with every replier wrapped.
func redactRepliers(reps map[string]Replier, red *redact.Redactor) map[string]Replier {
	if reps == nil {
		return nil
	}
	out := make(map[string]Replier, len(reps))
	for platform, r := range reps {
		if r != nil {
			r = &redactingReplier{inner: r, caps: CapsOf(r), red: red}
		}
		out[platform] = r
	}
	return out
}

// redactingActivity is the activity view of a channel that shows a turn's activity, with the
// plan and status it shows redacted.
type redactingActivity struct {
	inner ActivityShower
	red   *redact.Redactor
}

func (a redactingActivity) StartActivity(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) echogate.ActivityView {
	return redactingView{a.inner.StartActivity(ctx, conv, on), a.red}
}

type redactingView struct {
	inner echogate.ActivityView
	red   *redact.Redactor
}

func (v redactingView) Show(a echogate.Activity) {
	a.Status, a.Plan = v.red.Redact(a.Status), v.red.Redact(a.Plan)
	v.inner.Show(a)
}

func (v redactingView) End() { v.inner.End() }

// redactingReplier masks secrets in what it posts. It states the wrapped replier's capabilities
// (CapsProvider), wrapped where they carry text.
type redactingReplier struct {
	inner Replier
	caps  Caps
	red   *redact.Redactor
	obs   *redactingObserver // built once: it keeps per-turn stream state
	once  sync.Once
}

// Send implements Replier.
func (r *redactingReplier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	out.Text = r.red.Redact(out.Text)
	return r.inner.Send(ctx, out)
}

// Caps implements CapsProvider.
func (r *redactingReplier) Caps() Caps {
	c := Caps{Typer: r.caps.Typer, Finder: r.caps.Finder, Downloader: r.caps.Downloader}
	if r.caps.Activity != nil {
		c.Activity = redactingActivity{r.caps.Activity, r.red}
	}
	if r.caps.Streamer != nil {
		c.Streamer = redactingStreamer{r}
	}
	if r.caps.Editor != nil {
		c.Editor = redactingEditor{r}
	}
	if r.caps.Observer != nil {
		r.once.Do(func() {
			r.obs = &redactingObserver{inner: r.caps.Observer, red: r.red, turns: map[string]*redact.Stream{}}
		})
		c.Observer = r.obs
	}
	return c
}

type redactingEditor struct{ r *redactingReplier }

func (e redactingEditor) Edit(ctx context.Context, ref echogate.MessageRef, text string) error {
	return e.r.caps.Editor.Edit(ctx, ref, e.r.red.Redact(text))
}

type redactingStreamer struct{ r *redactingReplier }

func (s redactingStreamer) StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error) {
	out.Text = s.r.red.Redact(out.Text)
	st, err := s.r.caps.Streamer.StartStream(ctx, out)
	if err != nil {
		return nil, err
	}
	rs := &redactingStream{inner: st, r: s.r.red, red: s.r.red.Stream()}
	if pn := postNotifierOf(st); pn != nil {
		return &notifyingRedactingStream{rs, pn}, nil
	}
	return rs, nil
}

// redactingStream appends only text that can no longer turn out to be part of a secret, and
// finishes with the whole answer redacted. The pipeline calls it from one goroutine at a time.
type redactingStream struct {
	inner echogate.Stream
	r     *redact.Redactor
	red   *redact.Stream
}

func (s *redactingStream) Append(ctx context.Context, delta string) error {
	safe := s.red.Write(delta)
	if safe == "" {
		return nil
	}
	return s.inner.Append(ctx, safe)
}

func (s *redactingStream) Finish(ctx context.Context, final string) ([]echogate.MessageRef, error) {
	if rest := s.red.Flush(); rest != "" {
		// What was held back goes out as it would have without redaction; the final text,
		// which replaces the streamed one, decides what stays (an Append error is Finish's).
		_ = s.inner.Append(ctx, rest)
	}
	return s.inner.Finish(ctx, s.r.Redact(final))
}

// notifyingRedactingStream is a redactingStream over a stream that reports its message.
type notifyingRedactingStream struct {
	*redactingStream
	pn echogate.PostNotifier // the inner stream's
}

func (s *notifyingRedactingStream) OnPost(fn func(echogate.MessageRef)) {
	s.pn.OnPost(fn)
}

// maxObservedTurns bounds the turns whose delta events hold back text at once.
const maxObservedTurns = 1024

// redactingObserver masks secrets in turn events: delta events through one stream per turn
// (flushed before the turn's done or error event), the others whole. Safe for concurrent use.
type redactingObserver struct {
	inner TurnObserver
	red   *redact.Redactor
	mu    sync.Mutex
	turns map[string]*redact.Stream
}

func (o *redactingObserver) ObserveTurn(ev echogate.TurnEvent) {
	switch ev.Type {
	case echogate.TurnDelta:
		o.mu.Lock()
		st := o.turns[ev.Turn]
		if st == nil {
			if len(o.turns) >= maxObservedTurns {
				clear(o.turns) // a turn that never ended; the done event carries the whole answer
			}
			st = o.red.Stream()
			o.turns[ev.Turn] = st
		}
		ev.Text = st.Write(ev.Text)
		o.mu.Unlock()
		if ev.Text == "" {
			return
		}
	case echogate.TurnDone, echogate.TurnError:
		o.mu.Lock()
		st := o.turns[ev.Turn]
		delete(o.turns, ev.Turn)
		o.mu.Unlock()
		if st != nil {
			if rest := st.Flush(); rest != "" {
				o.inner.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDelta, Text: rest, Session: ev.Session, Turn: ev.Turn, EventID: ev.EventID, Time: ev.Time})
			}
		}
		ev.Text = o.red.Redact(ev.Text)
		ev.Detail = o.red.Redact(ev.Detail)
	default:
		ev.Text = o.red.Redact(ev.Text)
	}
	ev.Args = o.red.Redact(ev.Args)
	o.inner.ObserveTurn(ev)
}
