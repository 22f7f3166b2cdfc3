package slack

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// scaledClock runs k times faster than real time, consistently for Now and After, so a 1s
// Retry-After or stream interval takes 1/k s of wall time in tests.
type scaledClock struct {
	base time.Time
	k    float64
}

func newScaledClock(k float64) scaledClock { return scaledClock{base: time.Now(), k: k} }

func (c scaledClock) Now() time.Time {
	return c.base.Add(time.Duration(float64(time.Since(c.base)) * c.k))
}

func (c scaledClock) After(d time.Duration) <-chan time.Time {
	return time.After(time.Duration(float64(d) / c.k))
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recorder is a test sink that dedupes like the dispatcher (by DedupeKey) and answers posts
// through the channel: typing indicator, streamed reply, whole answer at Finish.
type recorder struct {
	t      *testing.T
	ch     *Channel
	ctx    context.Context
	answer func(ev echogate.InboundEvent) string
	// visible blocks after the first delta until the reply is visible in Slack, so replies
	// really stream instead of finishing before the first flush.
	visible func(ev echogate.InboundEvent, before int)
	count   func(ev echogate.InboundEvent) int

	mu       sync.Mutex
	seen     map[string]bool
	events   []echogate.InboundEvent
	refs     map[string][]echogate.MessageRef // event id → answer messages
	errs     []error
	answered int
	changed  chan struct{}
	wg       sync.WaitGroup
}

func (r *recorder) sink(ctx context.Context, ev echogate.InboundEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[ev.DedupeKey()] {
		return nil
	}
	r.seen[ev.DedupeKey()] = true
	r.events = append(r.events, ev)
	r.notifyLocked()
	if ev.Kind == echogate.KindReaction {
		return nil
	}
	r.wg.Add(1)
	go r.reply(ev)
	return nil
}

func (r *recorder) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) reply(ev echogate.InboundEvent) {
	defer r.wg.Done()
	ctx := r.ctx
	text := "Hello **there**, you said: " + ev.Text
	if r.answer != nil {
		text = r.answer(ev)
	}
	stop := r.ch.StartTyping(ctx, ev.Conversation, ev.Message)
	st, err := r.ch.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, ReplyTo: ev.Message})
	var refs []echogate.MessageRef
	if err == nil {
		before := 0
		if r.count != nil {
			before = r.count(ev)
		}
		for i, w := range strings.SplitAfter(text, " ") {
			if err = st.Append(ctx, w); err != nil {
				break
			}
			if i == 0 && r.visible != nil {
				r.visible(ev, before)
			}
		}
		if err == nil {
			refs, err = st.Finish(ctx, text)
		}
	}
	stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("answer %s: %w", ev.ID, err))
	}
	r.refs[ev.ID] = refs
	r.answered++
	r.notifyLocked()
}

// waitFor blocks until cond holds (checked on every recorder change) or the deadline.
func (r *recorder) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			r.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (r *recorder) waitAnswered(n int) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%d answers", n), func() bool { return r.answered >= n })
}

func (r *recorder) waitEvents(n int) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%d events", n), func() bool { return len(r.events) >= n })
}

func (r *recorder) snapshot() ([]echogate.InboundEvent, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]echogate.InboundEvent(nil), r.events...), append([]error(nil), r.errs...)
}

type env struct {
	t     *testing.T
	srv   *slacktest.Server
	ch    *Channel
	rec   *recorder
	clock scaledClock
	logs  *syncBuffer
	cfg   Config
}

const testSecret = "test-signing-secret"

// newEnv starts a fake Slack and a running channel against it. socket selects Socket Mode;
// otherwise the channel only takes HTTP events.
func newEnv(t *testing.T, socket bool, mutate func(*Config)) *env {
	t.Helper()
	clock := newScaledClock(50)
	srv := slacktest.New(slacktest.Options{Now: clock.Now, PingInterval: 200 * time.Millisecond})
	t.Cleanup(srv.Close)
	logs := &syncBuffer{}
	cfg := Config{
		BotToken: srv.BotToken(), SigningSecret: testSecret, APIURL: srv.APIURL(), Clock: clock,
		RequestTimeout: 2 * time.Second, // context deadlines run on wall time
	}
	if socket {
		cfg.AppToken = srv.AppToken()
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ch, err := New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("New = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{t: t, ch: ch, ctx: ctx, seen: map[string]bool{}, refs: map[string][]echogate.MessageRef{}, changed: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, rec.sink) }()
	t.Cleanup(func() {
		rec.wg.Wait()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
		if t.Failed() {
			t.Logf("channel logs:\n%s", logs.String())
		}
	})
	e := &env{t: t, srv: srv, ch: ch, rec: rec, clock: clock, logs: logs, cfg: cfg}
	rec.count = func(ev echogate.InboundEvent) int { return len(srv.BotMessages(ev.Conversation.Channel)) }
	rec.visible = func(ev echogate.InboundEvent, before int) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = srv.WaitFor(wctx, func() bool { return len(srv.BotMessages(ev.Conversation.Channel)) > before })
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	var werr error
	if socket {
		werr = srv.WaitFor(wctx, func() bool { return srv.OpenConnections() > 0 })
	} else {
		werr = srv.WaitFor(wctx, func() bool { return len(srv.CallsTo("auth.test")) > 0 })
	}
	if werr != nil {
		t.Fatalf("channel did not start: %v", werr)
	}
	return e
}

func (e *env) push(inner map[string]any, d slacktest.Delivery) string {
	e.t.Helper()
	id, err := e.srv.Push(inner, d)
	if err != nil {
		e.t.Fatalf("Push = %v", err)
	}
	return id
}

func (e *env) waitAck(env string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.WaitFor(ctx, func() bool { return e.srv.Acks(env) > 0 }); err != nil {
		e.t.Fatalf("envelope %s not acked: %v", env, err)
	}
}

// threadReplies returns the bot's live messages in thread ts of channel ch.
func (e *env) threadReplies(ch, ts string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range e.srv.BotMessages(ch) {
		if m.ThreadTS == ts {
			out = append(out, m)
		}
	}
	return out
}

func (e *env) noErrors() {
	e.t.Helper()
	if _, errs := e.rec.snapshot(); len(errs) > 0 {
		e.t.Fatalf("answer errors: %v", errs)
	}
}
