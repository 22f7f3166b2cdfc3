package discord

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// StartStream prepares a streamed reply in out.Conversation.Channel. It does no I/O: the first
// Append posts the first message right away, later Appends are coalesced and shown by editing it
// at most once per EditInterval (continuing in further messages past 2000 characters); Finish
// edits in the whole answer. Intermediate updates are best-effort (skipped, never queued, when
// the channel's outbound budget has no spare token); Finish waits for budget and rate limits.
func (c *Channel) StartStream(ctx context.Context, out echogate.Outbound) (_ echogate.Stream, err error) {
	defer c.recovered(&err, "start stream")
	if out.Conversation.Channel == "" {
		return nil, fmt.Errorf("discord: start stream: %w: Outbound.Conversation.Channel is empty", ErrNoChannel)
	}
	s := &stream{
		c:       c,
		channel: out.Conversation.Channel,
		reply:   replyRef(out),
		ctx:     context.WithoutCancel(ctx),
		session: string(out.Session),
		turn:    out.Turn,
		key:     turnKey(out.Turn, out.Kind),
		wake:    make(chan struct{}),
		act:     c.activityOf(out.Conversation.Channel),
	}
	s.continueIn(out.Continues)
	if s.act != nil {
		s.act.attach(s)
	}
	return s, nil
}

type streamMsg struct {
	ref     echogate.MessageRef
	content string
	edited  time.Time // when it was last posted or edited (when the request returned, so the next edit arrives EditInterval after this one did)
}

type stream struct {
	c       *Channel
	channel string
	reply   *messageReference
	ctx     context.Context // for background flushes: the StartStream context's values, no cancel
	session string
	turn    string
	key     string         // the turn's post key (nonces, marker); "" outside a turn
	wake    chan struct{}  // closed by Finish
	act     *activityState // the turn's activity, shown under intermediate text; nil without

	mu        sync.Mutex
	text      strings.Builder
	version   int // Appends so far
	shown     int // version last shown completely
	finished  bool
	idle      chan struct{} // closed when the running flusher exits; nil when none runs
	lastFlush time.Time
	onPost    func(echogate.MessageRef) // OnPost's hook, until the first message is created

	// posted is touched only by the active syncer: the flusher, or Finish after the flusher
	// exited.
	posted    []streamMsg
	continued bool // posted[0] is a continued message (stream_continue.go)
}

// Append adds delta to the reply. It never blocks on the network.
func (s *stream) Append(_ context.Context, delta string) (err error) {
	defer s.c.recovered(&err, "stream append")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return fmt.Errorf("discord: stream to %s: append: %w", s.channel, ErrStreamFinished)
	}
	if delta == "" {
		return nil
	}
	s.text.WriteString(delta)
	s.version++
	if s.idle == nil {
		idle := make(chan struct{})
		if s.c.spawn(func() { s.flush(idle) }) {
			s.idle = idle
		}
	}
	return nil
}

// touch makes the flusher show the text again (the activity line changed). It never blocks.
func (s *stream) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished || s.text.Len() == 0 {
		return
	}
	s.version++
	if s.idle == nil {
		idle := make(chan struct{})
		if s.c.spawn(func() { s.flush(idle) }) {
			s.idle = idle
		}
	}
}

// flush shows the accumulated text until it is shown completely, at most once per EditInterval.
func (s *stream) flush(idle chan struct{}) {
	defer close(idle)
	interval := s.c.cfg.EditInterval
	for {
		s.mu.Lock()
		if s.finished || s.version == s.shown {
			s.idle = nil
			s.mu.Unlock()
			return
		}
		var wait time.Duration
		if !s.lastFlush.IsZero() {
			wait = s.lastFlush.Add(interval).Sub(s.c.clock.Now())
		}
		s.mu.Unlock()
		if wait > 0 {
			select {
			case <-s.wake:
			case <-s.c.life.Done():
				s.mu.Lock()
				s.idle = nil
				s.mu.Unlock()
				return
			case <-s.c.clock.After(wait):
			}
			continue
		}
		s.mu.Lock()
		if s.finished {
			s.idle = nil
			s.mu.Unlock()
			return
		}
		text, v := s.text.String(), s.version
		s.lastFlush = s.c.clock.Now()
		s.mu.Unlock()
		if s.act != nil {
			if line := s.act.line(); line != "" {
				text += "\n" + line
			}
		}

		ctx, cancel := context.WithTimeout(s.ctx, s.c.cfg.RequestTimeout)
		complete, _ := s.sync(ctx, text, false)
		cancel()
		if complete {
			s.mu.Lock()
			s.shown = v
			s.mu.Unlock()
		}
	}
}

// Finish shows final (or, when final is empty, the text appended so far) as the complete answer:
// it edits the streamed messages, posts the parts that do not fit and deletes streamed messages
// the final text no longer needs. It blocks until Discord accepted everything or ctx ends and
// returns the references of the messages holding the answer, in order.
func (s *stream) Finish(ctx context.Context, final string) (_ []echogate.MessageRef, err error) {
	defer s.c.recovered(&err, "stream finish")
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return nil, fmt.Errorf("discord: stream to %s: finish: %w", s.channel, ErrStreamFinished)
	}
	s.finished = true
	close(s.wake)
	idle := s.idle
	text := s.text.String()
	s.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return nil, fmt.Errorf("discord: stream to %s: finish: %w", s.channel, ctx.Err())
		}
	}
	if strings.TrimSpace(final) == "" {
		final = text
	}
	if strings.TrimSpace(final) == "" { // nothing to show: the stream's messages go
		s.dropPosted(ctx)
		return nil, nil
	}
	_, err = s.sync(ctx, final, true)
	if err != nil {
		err = s.finishAnew(ctx, final, err)
	}
	refs := make([]echogate.MessageRef, 0, len(s.posted))
	for _, p := range s.posted {
		refs = append(refs, p.ref)
	}
	if err != nil {
		return refs, fmt.Errorf("discord: stream to %s: finish: %w", s.channel, err)
	}
	return refs, nil
}

// sync makes the posted messages show text. Intermediate syncs (final == false) skip what the
// budget or the per-message edit interval does not allow and report complete == false; the
// final sync waits for both and deletes messages text no longer needs.
func (s *stream) sync(ctx context.Context, text string, final bool) (complete bool, err error) {
	c := s.c
	chunks := splitMessage(text, MaxMessageLength)
	if final {
		chunks = withMarker(text, s.key) // the last part marked, for FindReply
	}
	complete = true
	for i, chunk := range chunks {
		if i < len(s.posted) {
			p := &s.posted[i]
			if p.content == chunk {
				continue
			}
			due := p.edited.Add(c.cfg.EditInterval)
			if !final {
				if c.clock.Now().Before(due) {
					complete = false
					continue
				}
			} else if wait := due.Sub(c.clock.Now()); wait > 0 && !c.sleep(ctx, wait) {
				return false, ctx.Err()
			}
			ok, err := c.edit(ctx, p.ref, chunk, final)
			if err != nil {
				if final {
					return false, fmt.Errorf("edit part %d: %w", i+1, err)
				}
				c.log.Debug("discord: stream edit skipped", "err", err, "session", s.session, "turn", s.turn)
				complete = false
				continue
			}
			if !ok {
				complete = false
				continue
			}
			// Spaced from the request's end, not its start: Discord counts an edit when it
			// arrives, and the next one must not arrive sooner than EditInterval after it.
			p.content, p.edited = chunk, c.clock.Now()
			continue
		}
		var reply *messageReference
		if i == 0 {
			reply = s.reply
		}
		nonce := ""
		if s.key != "" {
			nonce = partNonce(s.key, i)
		}
		ref, ok, err := c.postWith(ctx, s.channel, chunk, reply, final, nil, nonce)
		if err != nil {
			if final {
				return false, fmt.Errorf("post part %d: %w", i+1, err)
			}
			c.log.Debug("discord: stream post skipped", "err", err, "session", s.session, "turn", s.turn)
			return false, nil
		}
		if !ok {
			return false, nil // keep parts in order: later parts wait for this one
		}
		s.posted = append(s.posted, streamMsg{ref: ref, content: chunk, edited: c.clock.Now()})
		if i == 0 {
			s.created(ref)
		}
	}
	if final && len(s.posted) > len(chunks) {
		for _, p := range s.posted[len(chunks):] {
			if err := c.deleteMessage(ctx, p.ref); err != nil {
				c.log.Warn("discord: delete surplus streamed message", "err", err, "message", p.ref.ID, "session", s.session, "turn", s.turn)
			}
		}
		s.posted = s.posted[:len(chunks)]
	}
	return complete, nil
}
