package slack

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// waitClock is the system clock, except that each wait of an HTTP interactivity request
// (httpInteractionWait) ends only when the test fires it: the test decides when Slack's
// window has passed.
type waitClock struct{ waits chan chan time.Time }

func (c waitClock) Now() time.Time { return time.Now() }
func (c waitClock) After(d time.Duration) <-chan time.Time {
	if d != httpInteractionWait {
		return time.After(d)
	}
	ch := make(chan time.Time, 1)
	c.waits <- ch
	return ch
}

// interactionHarness is a channel on the HTTP Events API whose sink the test holds and
// releases, with a store that knows one prompt (SessionOf).
type interactionHarness struct {
	t       *testing.T
	srv     *slacktest.Server
	ch      *Channel
	clock   waitClock
	entered chan echogate.InboundEvent
	release chan error
	stored  echogate.ConversationRef
}

const storedPrompt = "1700000500.000100" // a prompt this process never posted; the store knows it

func newInteractionHarness(t *testing.T) *interactionHarness {
	srv := slacktest.New(slacktest.Options{PingInterval: 200 * time.Millisecond})
	t.Cleanup(srv.Close)
	h := &interactionHarness{t: t, srv: srv, clock: waitClock{waits: make(chan chan time.Time, 8)},
		entered: make(chan echogate.InboundEvent, 8), release: make(chan error),
		stored: echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: slacktest.DefaultTeamID, Channel: "C9", Thread: "1700000400.000100"}}
	sessionOf := func(_ context.Context, ref echogate.MessageRef) (echogate.ConversationRef, bool) {
		return h.stored, ref.ID == storedPrompt
	}
	ch, err := New(Config{BotToken: srv.BotToken(), SigningSecret: testSecret, APIURL: srv.APIURL(), Clock: h.clock,
		RequestTimeout: 2 * time.Second, SessionOf: sessionOf}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.ch = ch
	sink := func(ctx context.Context, ev echogate.InboundEvent) error {
		h.entered <- ev
		select {
		case err := <-h.release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	for !ch.running.Load() {
		select {
		case <-wctx.Done():
			t.Fatal("the channel did not start")
		case <-time.After(time.Millisecond):
		}
	}
	return h
}

// press sends a signed button press on message ts and returns the HTTP status, once answered.
func (h *interactionHarness) press(user, ts, responseURL string) <-chan int {
	payload := slacktest.ButtonPress(user, user, "C9", ts, "echogate_approve")
	if responseURL != "" {
		payload["response_url"] = responseURL
	}
	req := slacktest.FormRequest("/slack/events", testSecret, slacktest.PayloadForm(payload), time.Now())
	code := make(chan int, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ch.EventsHandler().ServeHTTP(w, req)
		code <- w.Code
	}()
	return code
}

func (h *interactionHarness) wait(what string, c <-chan int) int {
	h.t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		h.t.Fatalf("no HTTP answer to %s within 10s", what)
		return 0
	}
}

func (h *interactionHarness) waitEntered(what string) echogate.InboundEvent {
	h.t.Helper()
	select {
	case ev := <-h.entered:
		return ev
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s did not reach the sink within 10s", what)
		return echogate.InboundEvent{}
	}
}

func (h *interactionHarness) waitFor(what string) chan time.Time {
	h.t.Helper()
	select {
	case w := <-h.clock.waits:
		return w
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s: the request did not start waiting within 10s", what)
		return nil
	}
}

// An HTTP button press is answered 200 only once the sink took its event, and 503 when the
// sink refused it; its session is found from the store without asking Slack.
func TestHTTPInteractionAnsweredAfterTheSinkTookIt(t *testing.T) {
	h := newInteractionHarness(t)
	for _, tc := range []struct {
		name, user string
		sink       error
		want       int
	}{
		{"taken", "U1", nil, http.StatusOK},
		{"refused", "U2", errors.New("pipeline: mailbox full"), http.StatusServiceUnavailable},
	} {
		code := h.press(tc.user, storedPrompt, "")
		h.waitFor(tc.name)
		ev := h.waitEntered(tc.name)
		select {
		case c := <-code:
			t.Fatalf("%s: answered %d before the sink returned", tc.name, c)
		default:
		}
		h.release <- tc.sink
		if got := h.wait(tc.name, code); got != tc.want {
			t.Errorf("%s: HTTP answer = %d, want %d", tc.name, got, tc.want)
		}
		if ev.Conversation != h.stored || ev.Reaction != echogate.ReactionApprove {
			t.Errorf("%s: event %+v, want ✅ in the stored conversation %+v", tc.name, ev, h.stored)
		}
	}
	if n := len(h.srv.CallsTo("conversations.replies")) + len(h.srv.CallsTo("conversations.history")); n != 0 {
		t.Errorf("Slack lookups = %d, want 0: the store knew the prompt", n)
	}
}

// A press the worker has not reached when Slack's window ends is withdrawn and answered 503
// (Slack shows the user it failed, and it is not applied later); one the sink is already taking
// is answered with the sink's outcome.
func TestHTTPInteractionPastTheWindow(t *testing.T) {
	h := newInteractionHarness(t)
	held := h.press("U1", storedPrompt, "")
	heldWait := h.waitFor("the held press")
	h.waitEntered("the held press") // the worker of channel C9 is busy in the sink now

	queued := h.press("U2", storedPrompt, "")
	h.waitFor("the queued press") <- time.Now() // Slack's window ends before a worker took it
	if got := h.wait("the queued press", queued); got != http.StatusServiceUnavailable {
		t.Errorf("press not taken within the window: HTTP %d, want 503", got)
	}

	heldWait <- time.Now() // its window ends too, while the sink is taking it
	h.release <- nil
	if got := h.wait("the held press", held); got != http.StatusOK {
		t.Errorf("press the sink was taking at the window's end: HTTP %d, want 200 once taken", got)
	}

	next := h.press("U3", storedPrompt, "")
	h.waitFor("the next press")
	if ev := h.waitEntered("the next press"); ev.Actor.ID != "U3" {
		t.Errorf("the sink got %s's press, want U3's: the withdrawn press must not be applied", ev.Actor.ID)
	}
	h.release <- nil
	if got := h.wait("the next press", next); got != http.StatusOK {
		t.Errorf("next press: HTTP %d, want 200", got)
	}
}

// A press on a prompt no session can be found for (not in memory, not in the store, not on
// Slack) is not dropped silently: the presser is told privately, by response_url or, without
// one, an ephemeral message.
func TestUnmatchedPressTellsThePresser(t *testing.T) {
	h := newInteractionHarness(t)
	const unknown = "1700000599.000100"
	for _, tc := range []struct {
		name, responseURL string
	}{
		{"response_url", h.srv.ResponseURL("u1")},
		{"ephemeral", ""},
	} {
		code := h.press("U4", unknown, tc.responseURL)
		h.waitFor(tc.name)
		if got := h.wait(tc.name, code); got != http.StatusOK {
			t.Errorf("%s: HTTP %d, want 200 (handled: nothing to retry)", tc.name, got)
		}
	}
	select {
	case ev := <-h.entered:
		t.Errorf("the sink got %+v, want nothing for an unmatched press", ev)
	default:
	}
	told := func(text string) bool { return strings.Contains(text, "couldn't match this button") }
	if r := h.srv.Responses(); len(r) != 1 || !told(r[0].Text) || r[0].ResponseType != "ephemeral" || !strings.HasSuffix(r[0].Path, "/u1") {
		t.Errorf("response_url answers = %+v, want one ephemeral saying the press was not matched", r)
	}
	if e := h.srv.Ephemerals(); len(e) != 1 || e[0].User != "U4" || e[0].Channel != "C9" || !told(e[0].Text) {
		t.Errorf("ephemeral messages = %+v, want one to U4 in C9 saying the press was not matched", e)
	}
}
