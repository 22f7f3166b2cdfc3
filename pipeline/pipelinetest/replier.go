package pipelinetest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/echogate/echogate"
)

// Post is one message the Replier posted (or a stream it finished).
type Post struct {
	Ref      echogate.MessageRef
	Out      echogate.Outbound
	Text     string   // final text
	Appended []string // stream deltas, when streamed
	Streamed bool
	Edits    int // in-place edits after posting
}

// Replier records what the pipeline posts. It streams, observes turns, and signals every
// finished turn on Done (buffered; tests read it to wait for turns without sleeping).
type Replier struct {
	Platform string
	Done     chan echogate.TurnEvent // every "done" turn event
	// NoStream makes the replier not offer streaming.
	NoStream bool

	mu     sync.Mutex
	n      int
	posts  []Post
	events []echogate.TurnEvent
}

// NewReplier returns a Replier for platform with room for 1024 unread done events.
func NewReplier(platform string) *Replier {
	return &Replier{Platform: platform, Done: make(chan echogate.TurnEvent, 1024)}
}

func (r *Replier) nextRef(conv echogate.ConversationRef) echogate.MessageRef {
	r.n++
	return echogate.MessageRef{Platform: r.Platform, Channel: conv.Channel, ID: fmt.Sprintf("m%d", r.n)}
}

// Send records a message.
func (r *Replier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return echogate.MessageRef{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := r.nextRef(out.Conversation)
	r.posts = append(r.posts, Post{Ref: ref, Out: out, Text: out.Text})
	return ref, nil
}

// ObserveTurn records turn events.
func (r *Replier) ObserveTurn(ev echogate.TurnEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	if ev.Type == echogate.TurnDone {
		r.Done <- ev
	}
}

// Posts returns what was posted so far.
func (r *Replier) Posts() []Post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Post(nil), r.posts...)
}

// Texts returns the final texts posted so far, in order.
func (r *Replier) Texts() []string {
	var out []string
	for _, p := range r.Posts() {
		out = append(out, p.Text)
	}
	return out
}

// Events returns the observed turn events.
func (r *Replier) Events() []echogate.TurnEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]echogate.TurnEvent(nil), r.events...)
}

// StreamingReplier is a Replier that also streams.
type StreamingReplier struct{ *Replier }

// StartStream opens a recorded stream. A stream that continues a message (out.Continues) is
// recorded under that message's reference.
func (r StreamingReplier) StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := out.Continues
	if ref.IsZero() {
		ref = r.nextRef(out.Conversation)
	}
	r.posts = append(r.posts, Post{Ref: ref, Out: out, Streamed: true})
	return &stream{r: r.Replier, idx: len(r.posts) - 1}, nil
}

type stream struct {
	r        *Replier
	idx      int
	finished bool
	onPost   func(echogate.MessageRef)
}

// OnPost implements echogate.PostNotifier: fn is called at the first Append, as a platform
// creates the message with the first text.
func (s *stream) OnPost(fn func(echogate.MessageRef)) { s.onPost = fn }

func (s *stream) Append(ctx context.Context, delta string) error {
	s.r.mu.Lock()
	if s.finished {
		s.r.mu.Unlock()
		return fmt.Errorf("stream finished")
	}
	s.r.posts[s.idx].Appended = append(s.r.posts[s.idx].Appended, delta)
	ref, fn := s.r.posts[s.idx].Ref, s.onPost
	s.onPost = nil
	s.r.mu.Unlock()
	if fn != nil {
		fn(ref)
	}
	return nil
}

func (s *stream) Finish(ctx context.Context, final string) ([]echogate.MessageRef, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.finished {
		return nil, fmt.Errorf("stream finished twice")
	}
	s.finished = true
	s.r.posts[s.idx].Text = final
	return []echogate.MessageRef{s.r.posts[s.idx].Ref}, nil
}

// Joined returns the concatenated deltas of a streamed post.
func (p Post) Joined() string { return strings.Join(p.Appended, "") }

// Edit replaces the text of a posted message and counts the edit.
func (r *Replier) Edit(ctx context.Context, ref echogate.MessageRef, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.posts {
		if r.posts[i].Ref == ref {
			r.posts[i].Text = text
			r.posts[i].Edits++
			return nil
		}
	}
	return fmt.Errorf("edit: no message %s", ref.ID)
}

// FindReply implements pipeline.ReplyFinder: the last message of kind posted for turn.
func (r *Replier) FindReply(ctx context.Context, conv echogate.ConversationRef, turn string, kind echogate.OutboundKind) (echogate.MessageRef, string, bool, error) {
	if err := ctx.Err(); err != nil {
		return echogate.MessageRef{}, "", false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.posts) - 1; i >= 0; i-- {
		if p := r.posts[i]; p.Out.Turn == turn && p.Out.Kind == kind && p.Out.Conversation.Channel == conv.Channel {
			return p.Ref, p.Text, true, nil
		}
	}
	return echogate.MessageRef{}, "", false, nil
}
