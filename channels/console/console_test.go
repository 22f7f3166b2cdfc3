package console

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/channeltest"
)

const waitLimit = 10 * time.Second

// syncBuffer is a bytes.Buffer safe for the channel's goroutine and the test.
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

// pipeline is a scripted fake of the gateway behind the sink: each accepted event is handed to
// the test through events; the test answers with ObserveTurn and Send.
type pipeline struct {
	events chan echogate.InboundEvent
	err    error
}

func newPipeline() *pipeline { return &pipeline{events: make(chan echogate.InboundEvent, 32)} }

func (p *pipeline) sink(_ context.Context, ev echogate.InboundEvent) error {
	if p.err != nil {
		return p.err
	}
	p.events <- ev
	return nil
}

func (p *pipeline) next(t *testing.T) echogate.InboundEvent {
	t.Helper()
	select {
	case ev := <-p.events:
		return ev
	case <-time.After(waitLimit):
		t.Fatalf("no event reached the sink within %s", waitLimit)
	}
	return echogate.InboundEvent{}
}

func te(typ echogate.TurnEventType, ev echogate.InboundEvent, turn, text string) echogate.TurnEvent {
	return echogate.TurnEvent{Type: typ, Session: ev.SessionKey(), Turn: turn, EventID: ev.ID, Text: text}
}

type once struct {
	out, errw *syncBuffer
	answer    string
	err       error
	done      chan struct{}
}

// startOnce runs RunOnce in the background.
func startOnce(t *testing.T, cfg Config, p *pipeline, text string) (*Channel, *once) {
	t.Helper()
	o := &once{out: &syncBuffer{}, errw: &syncBuffer{}, done: make(chan struct{})}
	cfg.Out, cfg.Err = o.out, o.errw
	ch, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(o.done)
		o.answer, o.err = ch.RunOnce(context.Background(), p.sink, text)
	}()
	return ch, o
}

func (o *once) wait(t *testing.T) {
	t.Helper()
	select {
	case <-o.done:
	case <-time.After(waitLimit):
		t.Fatalf("RunOnce did not return within %s", waitLimit)
	}
}

func TestRunOncePrintsOnlyTheAnswer(t *testing.T) {
	for name, tt := range map[string]struct {
		session     string
		wantChannel string
		wantKey     echogate.SessionKey
		ephemeral   bool
	}{
		"no session: one-shot": {"", "", "", true},
		"named session":        {"work", "work", "console:work", false},
		"foreign session key":  {"slack:C1:1.2", "slack:C1:1.2", "slack:C1:1.2", false},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPipeline()
			ch, o := startOnce(t, Config{Session: tt.session, User: "ann"}, p, "what time is it?")
			ev := p.next(t)
			if ev.Kind != echogate.KindDirect || ev.Text != "what time is it?" || ev.Actor.ID != "ann" || ev.ID == "" ||
				ev.Conversation.Platform != echogate.PlatformConsole || !ev.Conversation.DM || ev.Ephemeral != tt.ephemeral || ev.AutoApprove {
				t.Fatalf("event = %+v", ev)
			}
			if tt.wantChannel != "" && ev.Conversation.Channel != tt.wantChannel {
				t.Errorf("channel = %q, want %q", ev.Conversation.Channel, tt.wantChannel)
			}
			if tt.wantChannel == "" && !strings.HasPrefix(ev.Conversation.Channel, "once-") {
				t.Errorf("channel = %q, want a fresh once-… session", ev.Conversation.Channel)
			}
			if tt.wantKey != "" && ev.SessionKey() != tt.wantKey {
				t.Errorf("SessionKey = %q, want %q", ev.SessionKey(), tt.wantKey)
			}
			ch.ObserveTurn(te(echogate.TurnStarted, ev, "t1", ""))
			ch.ObserveTurn(te(echogate.TurnDelta, ev, "t1", "Let me check."))
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnToolCall, Session: ev.SessionKey(), Turn: "t1", Tool: "current_time", Args: `{}`})
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnToolResult, Session: ev.SessionKey(), Turn: "t1", Tool: "current_time", Text: "12:00"})
			ch.ObserveTurn(te(echogate.TurnDelta, ev, "t1", "It is noon."))
			// Events of another session are ignored.
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: "console:other", Text: "wrong", Status: "done"})
			if _, err := ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, Text: "It is noon.", Turn: "t1"}); err != nil {
				t.Fatal(err)
			}
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Text: "It is noon.", Status: "done"})
			o.wait(t)
			if o.err != nil || o.answer != "It is noon." {
				t.Errorf("RunOnce = %q, %v, want It is noon., nil", o.answer, o.err)
			}
			if got := o.out.String(); got != "It is noon.\n" {
				t.Errorf("stdout = %q, want only the answer and a newline", got)
			}
			if got := o.errw.String(); !strings.Contains(got, "→ current_time {}") || !strings.Contains(got, "← current_time: 12:00") || strings.Contains(got, "\x1b[") {
				t.Errorf("stderr = %q, want the tool call and result, no colours without a TTY", got)
			}
		})
	}
}

func TestRunOnceDeniesWithoutTerminal(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg        Config
		sendPrompt bool
		wantKind   echogate.EventKind
		wantEmoji  string
		wantText   string
		wantErr    string
	}{
		// Nobody denied it: the reaction's text says why (the model reads it, not "ann denied it").
		"denied on the prompt":       {Config{}, true, echogate.KindReaction, echogate.ReactionDeny, noTerminalReason, "not run: run_command needs approval and there is no terminal to ask"},
		"no prompt message: in text": {Config{PromptGrace: time.Millisecond}, false, echogate.KindDirect, "", "deny", "not run: run_command"},
		"auto-approve":               {Config{AutoApprove: true}, true, echogate.KindReaction, echogate.ReactionApprove, "", "approved run_command"},
		"terminal: approve session":  {Config{IsTTY: true, In: strings.NewReader("s\n")}, true, echogate.KindReaction, echogate.ReactionApproveSession, "", "approve? [y]es / [s]ession / [N]o"},
		"terminal: enter means no":   {Config{IsTTY: true, In: strings.NewReader("\n")}, true, echogate.KindReaction, echogate.ReactionDeny, "", "approve?"},
		"terminal closed: no":        {Config{IsTTY: true, In: strings.NewReader("")}, true, echogate.KindReaction, echogate.ReactionDeny, "", "approve?"},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPipeline()
			tt.cfg.User = "ann"
			ch, o := startOnce(t, tt.cfg, p, "clean up")
			ev := p.next(t)
			if ev.AutoApprove != tt.cfg.AutoApprove {
				t.Errorf("event AutoApprove = %v, want %v", ev.AutoApprove, tt.cfg.AutoApprove)
			}
			ch.ObserveTurn(te(echogate.TurnStarted, ev, "t1", ""))
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID,
				CallID: "c1", Tool: "run_command", Args: `{"cmd":"rm -r tmp"}`})
			var prompt echogate.MessageRef
			if tt.sendPrompt {
				var err error
				prompt, err = ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: ev.Conversation, Text: "Run run_command?", Turn: "t1"})
				if err != nil || prompt.IsZero() || prompt.Platform != "console" {
					t.Fatalf("Send(prompt) = %+v, %v", prompt, err)
				}
			}
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Status: "paused"})
			dec := p.next(t)
			if dec.Kind != tt.wantKind || dec.Reaction != tt.wantEmoji || dec.Text != tt.wantText || dec.Actor.ID != "ann" ||
				dec.SessionKey() != ev.SessionKey() || dec.Ephemeral != ev.Ephemeral || dec.ID == ev.ID {
				t.Fatalf("decision = %+v, want kind %v emoji %q text %q by ann in the same session", dec, tt.wantKind, tt.wantEmoji, tt.wantText)
			}
			if tt.sendPrompt && dec.Target != prompt {
				t.Errorf("decision target = %+v, want the prompt %+v", dec.Target, prompt)
			}
			// The resumed turn answers with the model's account of the decision.
			ch.ObserveTurn(te(echogate.TurnStarted, dec, "t2", ""))
			ch.ObserveTurn(te(echogate.TurnDelta, dec, "t2", "I was not allowed to run it."))
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t2", EventID: dec.ID, Text: "I was not allowed to run it.", Status: "done"})
			o.wait(t)
			if o.err != nil || o.out.String() != "I was not allowed to run it.\n" {
				t.Errorf("RunOnce = %q, %v; stdout %q", o.answer, o.err, o.out.String())
			}
			if !strings.Contains(o.errw.String(), tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", o.errw.String(), tt.wantErr)
			}
		})
	}
}

func TestRunOnceQuestionNeedsTerminal(t *testing.T) {
	p := newPipeline()
	ch, o := startOnce(t, Config{}, p, "book a table")
	ev := p.next(t)
	ch.ObserveTurn(te(echogate.TurnStarted, ev, "t1", ""))
	ch.ObserveTurn(te(echogate.TurnAsk, ev, "t1", "For how many people?"))
	ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Status: "paused"})
	o.wait(t)
	if !errors.Is(o.err, ErrNeedsTerminal) || o.out.String() != "For how many people?\n" {
		t.Errorf("RunOnce = %q, %v; stdout %q, want the question and ErrNeedsTerminal", o.answer, o.err, o.out.String())
	}
}

func TestRunOnceQuestionOnTerminal(t *testing.T) {
	p := newPipeline()
	ch, o := startOnce(t, Config{IsTTY: true, In: strings.NewReader("four\n")}, p, "book a table")
	ev := p.next(t)
	ch.ObserveTurn(te(echogate.TurnAsk, ev, "t1", "For how many people?"))
	ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Status: "paused"})
	ans := p.next(t)
	if ans.Kind != echogate.KindDirect || ans.Text != "four" {
		t.Fatalf("answer event = %+v, want the typed answer", ans)
	}
	ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t2", EventID: ans.ID, Text: "Booked for four.", Status: "done"})
	o.wait(t)
	if o.err != nil || o.out.String() != "Booked for four.\n" {
		t.Errorf("RunOnce = %q, %v; stdout %q", o.answer, o.err, o.out.String())
	}
}

func TestRunOnceEnds(t *testing.T) {
	t.Run("timeout stops the turn", func(t *testing.T) {
		p := newPipeline()
		_, o := startOnce(t, Config{Timeout: 20 * time.Millisecond}, p, "slow")
		ev := p.next(t)
		o.wait(t)
		if o.err == nil || !strings.Contains(o.err.Error(), "no answer within 20ms") {
			t.Errorf("RunOnce error = %v, want a timeout", o.err)
		}
		if stop := p.next(t); stop.Text != "stop" || stop.SessionKey() != ev.SessionKey() {
			t.Errorf("after the timeout the sink got %+v, want a stop of the session", stop)
		}
	})
	t.Run("sink refuses", func(t *testing.T) {
		p := newPipeline()
		p.err = &echogate.RetryAfterError{After: time.Second, Err: errors.New("full")}
		_, o := startOnce(t, Config{}, p, "hi")
		o.wait(t)
		if _, ok := echogate.RetryAfter(o.err); !ok {
			t.Errorf("RunOnce error = %v, want the sink's RetryAfterError", o.err)
		}
	})
	for status, want := range map[string]error{"aborted": ErrAborted, "error": errors.New("console: the turn failed")} {
		t.Run(status, func(t *testing.T) {
			p := newPipeline()
			ch, o := startOnce(t, Config{}, p, "hi")
			ev := p.next(t)
			ch.ObserveTurn(te(echogate.TurnDelta, ev, "t1", "partial"))
			ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Status: status})
			o.wait(t)
			if o.err == nil || o.err.Error() != want.Error() || o.answer != "partial" {
				t.Errorf("RunOnce = %q, %v, want partial, %v", o.answer, o.err, want)
			}
		})
	}
	t.Run("answered without a turn", func(t *testing.T) {
		p := newPipeline()
		ch, o := startOnce(t, Config{}, p, "hi")
		ev := p.next(t)
		if _, err := ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutNotice, Conversation: ev.Conversation, Text: "daily budget spent"}); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: "Sorry, not today."}); err != nil {
			t.Fatal(err)
		}
		o.wait(t)
		if o.err != nil || o.out.String() != "Sorry, not today.\n" || !strings.Contains(o.errw.String(), "notice: daily budget spent") {
			t.Errorf("RunOnce = %q, %v; stdout %q; stderr %q", o.answer, o.err, o.out.String(), o.errw.String())
		}
	})
	t.Run("empty message", func(t *testing.T) {
		ch, _ := New(Config{}, nil)
		if _, err := ch.RunOnce(context.Background(), newPipeline().sink, "  "); err == nil {
			t.Errorf("RunOnce(empty) error = nil, want an error")
		}
	})
}

// interactive runs Run on a pipe.
type interactive struct {
	ch     *Channel
	in     *io.PipeWriter
	out    *syncBuffer
	errw   *syncBuffer
	done   chan error
	cancel context.CancelFunc
}

func startRun(t *testing.T, cfg Config, p *pipeline) *interactive {
	t.Helper()
	r, w := io.Pipe()
	it := &interactive{in: w, out: &syncBuffer{}, errw: &syncBuffer{}, done: make(chan error, 1)}
	cfg.In, cfg.Out, cfg.Err = r, it.out, it.errw
	ch, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	it.ch = ch
	ctx, cancel := context.WithCancel(context.Background())
	it.cancel = cancel
	go func() { it.done <- ch.Run(ctx, p.sink) }()
	t.Cleanup(func() { cancel(); w.Close(); r.Close() })
	return it
}

func (it *interactive) typeLine(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(it.in, s+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (it *interactive) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := it.ch.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func (it *interactive) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-it.done:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("Run did not return within %s", waitLimit)
	}
	return nil
}

func TestRunInteractive(t *testing.T) {
	p := newPipeline()
	it := startRun(t, Config{Session: "main"}, p)
	it.typeLine(t, "hello")
	ev := p.next(t)
	if ev.Text != "hello" || ev.Conversation.Channel != "main" || ev.Ephemeral || ev.Actor.ID != "console-user" {
		t.Fatalf("event = %+v", ev)
	}
	it.ch.ObserveTurn(te(echogate.TurnStarted, ev, "t1", ""))
	it.ch.ObserveTurn(te(echogate.TurnDelta, ev, "t1", "Hi "))
	it.ch.ObserveTurn(te(echogate.TurnDelta, ev, "t1", "there"))
	it.flush(t)
	if got := it.out.String(); got != "Hi there" {
		t.Errorf("stdout while streaming = %q, want the deltas", got)
	}
	// Typed during the turn: "stop" goes at once, a message waits for the turn.
	it.typeLine(t, "stop")
	if stop := p.next(t); stop.Text != "stop" {
		t.Fatalf("event = %+v, want the stop", stop)
	}
	it.typeLine(t, "and then?")
	if _, err := it.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, Text: "Hi there!"}); err != nil {
		t.Fatal(err)
	}
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Text: "Hi there!", Status: "aborted"})
	second := p.next(t)
	if second.Text != "and then?" {
		t.Fatalf("event = %+v, want the queued line after the turn", second)
	}
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t2", EventID: second.ID, Text: "Nothing.", Status: "done"})
	it.in.Close() // Ctrl-D
	if err := it.wait(t); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if got := it.out.String(); got != "Hi there!\nNothing.\n" {
		t.Errorf("stdout = %q, want each answer once", got)
	}
	if !strings.Contains(it.errw.String(), "(stopped)") {
		t.Errorf("stderr = %q, want the stop shown", it.errw.String())
	}
}

func TestRunInteractiveApproval(t *testing.T) {
	p := newPipeline()
	it := startRun(t, Config{IsTTY: true}, p)
	it.typeLine(t, "delete tmp")
	ev := p.next(t)
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Session: ev.SessionKey(), Turn: "t1", CallID: "c1", Tool: "run_command", Text: "run_command wants to run rm"})
	ref, _ := it.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: ev.Conversation, Text: "Approve?"})
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Status: "paused"})
	it.flush(t)
	if !strings.Contains(it.errw.String(), "approve? [y]es / [s]ession / [N]o") {
		t.Fatalf("stderr = %q, want the approval question", it.errw.String())
	}
	it.typeLine(t, "y")
	dec := p.next(t)
	if dec.Kind != echogate.KindReaction || dec.Reaction != echogate.ReactionApprove || dec.Target != ref {
		t.Errorf("decision = %+v, want ✅ on %+v", dec, ref)
	}
	it.cancel()
	if err := it.wait(t); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestObserveTurnNeverBlocks(t *testing.T) {
	ch, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Nobody prints: deltas beyond the bound are dropped, terminal events kept.
	for range maxQueued + 1000 {
		ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDelta, Text: "x"})
	}
	ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Status: "done"})
	items := ch.q.take()
	if len(items) != maxQueued+1 || items[len(items)-1].ev.Type != echogate.TurnDone {
		t.Errorf("queued = %d items, want %d with done last", len(items), maxQueued+1)
	}
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"negative timeout": {Timeout: -1},
		"user with tab":    {User: "a\tb"},
		"session spaces":   {Session: "a b"},
	} {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("New(%s) error = nil, want an error", name)
		}
	}
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	pipes := map[channels.Channel]*io.PipeWriter{}
	outs := map[channels.Channel]*syncBuffer{}
	channeltest.RunConformance(t, channeltest.Harness{
		Open: func(t *testing.T) channels.Channel {
			r, w := io.Pipe()
			out := &syncBuffer{}
			ch, err := New(Config{In: r, Out: out, Session: "conf"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close(); r.Close() })
			mu.Lock()
			pipes[ch], outs[ch] = w, out
			mu.Unlock()
			return ch
		},
		DirectMessage: func(t *testing.T, ch channels.Channel, user, text string) channeltest.Delivery {
			mu.Lock()
			w := pipes[ch]
			mu.Unlock()
			if _, err := io.WriteString(w, text+"\n"); err != nil {
				t.Fatal(err)
			}
			return channeltest.Delivery{Conversation: echogate.ConversationRef{Platform: "console", Channel: "conf", DM: true}, User: "console-user"}
		},
		Posted: func(t *testing.T, ch channels.Channel, _ echogate.ConversationRef) []string {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := ch.(*Channel).Flush(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			out := outs[ch]
			mu.Unlock()
			return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		},
	})
}

// The pipeline's real order: the prompt message is sent before the approval_request event, and a
// failed turn reports error then done.
func TestPipelineOrder(t *testing.T) {
	p := newPipeline()
	it := startRun(t, Config{}, p)
	it.typeLine(t, "delete tmp")
	ev := p.next(t)
	it.ch.ObserveTurn(te(echogate.TurnStarted, ev, "t1", ""))
	ref, _ := it.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: ev.Conversation, Text: "PROMPT run_command", Turn: "t1"})
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, CallID: "c1", Tool: "run_command", Text: "PROMPT run_command"})
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t1", EventID: ev.ID, Status: "paused", Text: "PROMPT run_command"})
	dec := p.next(t)
	if dec.Reaction != echogate.ReactionDeny || dec.Target != ref {
		t.Fatalf("decision = %+v, want ❌ on %+v (no terminal)", dec, ref)
	}
	it.ch.ObserveTurn(te(echogate.TurnStarted, dec, "t2", ""))
	it.ch.ObserveTurn(te(echogate.TurnError, dec, "t2", "Something went wrong (ref t2)"))
	it.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: ev.SessionKey(), Turn: "t2", EventID: dec.ID, Status: "error", Text: "Something went wrong (ref t2)"})
	it.flush(t)
	it.in.Close()
	if err := it.wait(t); err != nil {
		t.Errorf("Run = %v", err)
	}
	// The terminal asks in its own words, once; the platforms' prompt text is not shown.
	if got := strings.Count(it.errw.String(), "approval needed: run run_command"); got != 1 || strings.Contains(it.errw.String(), "PROMPT") {
		t.Errorf("stderr shows the prompt %d times, want once in the terminal's words: %q", got, it.errw.String())
	}
	if got := it.out.String(); got != "" {
		t.Errorf("stdout = %q, want nothing (the failure is shown on stderr)", got)
	}
	if got := strings.Count(it.errw.String(), "Something went wrong"); got != 1 {
		t.Errorf("stderr shows the failure %d times, want once: %q", got, it.errw.String())
	}
}
