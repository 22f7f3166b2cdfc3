package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/channeltest"
)

func readError(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("error body is not JSON: %v", err)
	}
	return body.Error
}

func TestChatRejectsBadRequests(t *testing.T) {
	e := newEnv(t, Config{MaxTextBytes: 64})
	for name, tt := range map[string]struct {
		method, ctype, origin, body string
		status                      int
		want                        string // substring of the error
	}{
		"GET":                           {method: "GET", status: 405, want: "use POST"},
		"no content type":               {ctype: "-", body: `{"text":"hi"}`, status: 415, want: "Content-Type: application/json"},
		"form content type":             {ctype: "application/x-www-form-urlencoded", body: `text=hi`, status: 415, want: "application/json"},
		"cross origin":                  {origin: "https://evil.example", body: `{"text":"hi"}`, status: 403, want: "cross-origin"},
		"empty body":                    {body: "", status: 400, want: "request body is empty"},
		"malformed":                     {body: "{\n  \"text\": hi}", status: 400, want: "malformed JSON at line 2, column 11"},
		"truncated":                     {body: `{"text": "hi"`, status: 400, want: "ends before the object is complete"},
		"unknown field":                 {body: `{"text":"hi","txet":"x"}`, status: 400, want: `unknown field "txet": the accepted fields are "session", "user", "text" and "id"`},
		"text not a string":             {body: `{"text": 42}`, status: 400, want: `field "text" must be a string, not a JSON number`},
		"array body":                    {body: `["hi"]`, status: 400, want: "not an object"},
		"trailing data":                 {body: `{"text":"hi"} {}`, status: 400, want: "unexpected data after the JSON object"},
		"empty text":                    {body: `{"text":""}`, status: 400, want: "text is empty"},
		"whitespace text":               {body: `{"text":" \n\t "}`, status: 400, want: "text is empty"},
		"text too long":                 {body: `{"text":"` + strings.Repeat("x", 65) + `"}`, status: 400, want: "text is 65 bytes, over the limit of 64 bytes"},
		"body too large":                {body: `{"text":"` + strings.Repeat("x", 40<<10) + `"}`, status: 413, want: "request body is over"},
		"session bad char":              {body: `{"session":"a b","text":"hi"}`, status: 400, want: `holds ' ' at byte 1`},
		"session too long":              {body: `{"session":"` + strings.Repeat("s", 129) + `","text":"hi"}`, status: 400, want: "over the limit of 128"},
		"user control char":             {body: `{"user":"a\u0007","text":"hi"}`, status: 400, want: "user id"},
		"message id bad":                {body: `{"id":"x/y","text":"hi"}`, status: 400, want: "message id"},
		"same origin is fine, bad text": {origin: "http://HOST", body: `{"text":""}`, status: 400, want: "text is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, e.srv.URL+"/api/chat", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			switch tt.ctype {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", strings.Replace(tt.origin, "HOST", req.URL.Host, 1))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("POST /api/chat %s: status = %d, want %d", name, resp.StatusCode, tt.status)
			}
			if tt.status == 405 && resp.Header.Get("Allow") != "POST" {
				t.Errorf("Allow = %q, want POST", resp.Header.Get("Allow"))
			}
			if msg := readError(t, resp); !strings.Contains(msg, tt.want) {
				t.Errorf("error = %q, want it to contain %q", msg, tt.want)
			}
		})
	}
	e.sink.empty(t)
}

func TestChatStreamsTheTurn(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp := e.post(t, ctx, "/api/chat", `{"session":"s1","user":"alice","text":"hello"}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d, want 200: %s", resp.StatusCode, readError(t, resp))
	}
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/event-stream") {
		t.Errorf("Content-Type = %q, want text/event-stream", got)
	}
	if got := resp.Header.Get("X-Echogate-Session"); got != "s1" {
		t.Errorf("X-Echogate-Session = %q, want s1", got)
	}
	ev := e.sink.next(t)
	wantConv := echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "s1", DM: true}
	if ev.ID == "" || ev.Kind != echogate.KindDirect || ev.Conversation != wantConv || ev.Actor.ID != "alice" ||
		ev.Text != "hello" || ev.ReceivedAt.IsZero() || ev.Message != (echogate.MessageRef{Platform: "web", Channel: "s1", ID: ev.ID}) ||
		ev.SessionKey() != "web:s1" || ev.AutoApprove || ev.Ephemeral {
		t.Fatalf("event = %+v, want a direct message from alice in web:s1", ev)
	}

	// Another turn's event in the same session must not show on this stream.
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "s1", "other", ""))
	e.ch.ObserveTurn(turnEv(echogate.TurnDone, "s1", "other", "other answer"))
	steps := []echogate.TurnEvent{
		turnEv(echogate.TurnStarted, "s1", ev.ID, ""),
		turnEv(echogate.TurnDelta, "s1", ev.ID, "Hel"),
		turnEv(echogate.TurnDelta, "s1", ev.ID, "lo"),
		{Type: echogate.TurnToolCall, Session: "web:s1", EventID: ev.ID, Tool: "current_time", CallID: "c1", Args: `{}`},
		{Type: echogate.TurnToolResult, Session: "web:s1", EventID: ev.ID, Tool: "current_time", CallID: "c1", Text: "12:00"},
		{Type: echogate.TurnDone, Session: "web:s1", EventID: ev.ID, Text: "Hello", Status: "done", Seq: 999},
		turnEv(echogate.TurnDelta, "s1", ev.ID, "after the end"),
	}
	for _, s := range steps {
		e.ch.ObserveTurn(s)
	}
	got := newSSEReader(resp.Body).rest(t)
	if want := []string{"start", "delta", "delta", "tool_call", "tool_result", "done"}; !slices.Equal(types(got), want) {
		t.Fatalf("event types = %q, want %q", types(got), want)
	}
	for i, g := range got {
		id, err := strconv.Atoi(g.ID)
		if err != nil || id != i+3 { // the other turn's two events took ids 1 and 2
			t.Errorf("event %d id = %q, want %d", i, g.ID, i+3)
		}
		w := g.turn(t)
		if w.Seq != int64(id) || string(w.Type) != g.Type || w.EventID != ev.ID || w.Session != "web:s1" {
			t.Errorf("event %d data = %+v, want seq %d, type %s, event id %s", i, w, id, g.Type, ev.ID)
		}
	}
	if w := got[5].turn(t); w.Text != "Hello" || w.Status != "done" {
		t.Errorf("done = %+v, want text Hello, status done", w)
	}
	if w := got[3].turn(t); w.Tool != "current_time" || w.CallID != "c1" || w.Args != "{}" {
		t.Errorf("tool_call = %+v, want current_time c1 {}", w)
	}
	snap, ok := e.ch.History("s1")
	if !ok || len(snap.Messages) != 1 || snap.Messages[0].Role != "user" || snap.Messages[0].User != "alice" || snap.Messages[0].Text != "hello" {
		t.Errorf("History(s1) = %+v, %v, want the user's message", snap, ok)
	}
}

func TestChatDefaultsSessionAndUser(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp := e.post(t, ctx, "/api/chat", `{"text":"hi"}`)
	defer resp.Body.Close()
	session := resp.Header.Get("X-Echogate-Session")
	if resp.StatusCode != 200 || checkSession(session) != "" {
		t.Fatalf("status %d, session %q, want 200 and a generated valid session", resp.StatusCode, session)
	}
	ev := e.sink.next(t)
	if ev.Conversation.Channel != session || ev.Actor.ID != "web-user" || ev.Ephemeral {
		t.Errorf("event = %+v, want session %s, user web-user, persistent", ev, session)
	}
	e.ch.ObserveTurn(turnEv(echogate.TurnDone, session, ev.ID, "ok"))
	if got := types(newSSEReader(resp.Body).rest(t)); !slices.Equal(got, []string{"done"}) {
		t.Errorf("events = %q, want [done]", got)
	}
}

func TestChatErrorEndsTheStream(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp := e.post(t, ctx, "/api/chat", `{"session":"s","text":"hi"}`)
	defer resp.Body.Close()
	ev := e.sink.next(t)
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "s", ev.ID, ""))
	e.ch.ObserveTurn(turnEv(echogate.TurnError, "s", ev.ID, "model unavailable"))
	done := turnEv(echogate.TurnDone, "s", ev.ID, "model unavailable")
	done.Status = string(echogate.TurnFailed)
	e.ch.ObserveTurn(done)
	got := newSSEReader(resp.Body).rest(t)
	if !slices.Equal(types(got), []string{"start", "error", "done"}) {
		t.Fatalf("events = %q, want [start error done]", types(got))
	}
	if w := got[2].turn(t); w.Status != "failed" {
		t.Errorf("done status = %q, want failed", w.Status)
	}
}

// The done event names the outcome as the SSE contract does: done, paused, stopped or failed.
func TestDoneStatusOnTheWire(t *testing.T) {
	for in, want := range map[echogate.TurnStatus]string{
		echogate.TurnDoneSt: "done", echogate.TurnPaused: "paused", echogate.TurnAborted: "stopped", echogate.TurnFailed: "failed", "": "done",
	} {
		if got := wireStatus(string(in)); got != want {
			t.Errorf("wireStatus(%q) = %q, want %q", in, got, want)
		}
	}
}

type tempErr struct{}

func (tempErr) Error() string   { return "mailbox full" }
func (tempErr) Temporary() bool { return true }

var errMailboxFull = errors.New("pipeline: session mailbox is full")

func TestChatSinkErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		err        error
		status     int
		retryAfter string
	}{
		"configured back-pressure": {fmt.Errorf("session web:s: %w", errMailboxFull), 429, "1"},
		"back-pressure with wait":  {fmt.Errorf("dispatch: %w", &echogate.RetryAfterError{After: 2500 * time.Millisecond, Err: errors.New("mailbox full")}), 429, "3"},
		"temporary":                {tempErr{}, 429, "1"},
		"shutdown":                 {errors.New("dispatcher stopped"), 503, "5"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, Config{IsBackpressure: func(err error) bool { return errors.Is(err, errMailboxFull) }})
			e.sink.setErr(tt.err)
			for path, body := range map[string]string{"/api/chat": `{"session":"s","text":"hi"}`, "/api/chat/stop": `{"session":"s"}`} {
				resp := e.post(t, context.Background(), path, body)
				if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.retryAfter {
					t.Errorf("POST %s with sink error %v = %d (Retry-After %q), want %d (%q)", path, tt.err, resp.StatusCode, resp.Header.Get("Retry-After"), tt.status, tt.retryAfter)
				}
				if msg := readError(t, resp); !strings.Contains(msg, "retry") {
					t.Errorf("error = %q, want it to say when to retry", msg)
				}
			}
			// A rejected message leaves nothing behind.
			if snap, _ := e.ch.History("s"); len(snap.Messages) != 0 {
				t.Errorf("History after a rejected message = %+v, want empty", snap.Messages)
			}
		})
	}
}

func TestChatBeforeRunAndAfterStop(t *testing.T) {
	ch, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, detail := ch.Ready(); ok || detail != "not started" {
		t.Errorf("Ready before Run = %v %q, want false, not started", ok, detail)
	}
	e := &env{ch: ch}
	e.srv = newTestServer(t, ch)
	resp := e.post(t, context.Background(), "/api/chat", `{"text":"hi"}`)
	if resp.StatusCode != 503 {
		t.Errorf("POST before Run = %d, want 503", resp.StatusCode)
	}
	readError(t, resp)

	// Run, attach a stream, then stop: the stream ends and Ready turns false.
	sink := newFakeSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink.sink) }()
	<-ch.started
	if err := ch.Run(context.Background(), sink.sink); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
	}
	if ok, _ := ch.Ready(); !ok {
		t.Errorf("Ready during Run = false, want true")
	}
	resp = e.post(t, context.Background(), "/api/chat", `{"session":"x","text":"hi"}`)
	defer resp.Body.Close()
	sink.next(t)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("reading the stream after stop: %v", err)
	}
	if ok, detail := ch.Ready(); ok || detail != "stopped" {
		t.Errorf("Ready after Run = %v %q, want false, stopped", ok, detail)
	}
	resp2 := e.post(t, context.Background(), "/api/chat", `{"text":"hi"}`)
	if resp2.StatusCode != 503 {
		t.Errorf("POST after Run = %d, want 503", resp2.StatusCode)
	}
	readError(t, resp2)
}

func TestStop(t *testing.T) {
	e := newEnv(t, Config{})
	resp := e.post(t, context.Background(), "/api/chat/stop", `{"session":"s9","user":"bob"}`)
	if resp.StatusCode != 202 {
		t.Fatalf("stop status = %d, want 202: %s", resp.StatusCode, readError(t, resp))
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body["ok"] != true {
		t.Errorf("stop body = %v, %v, want ok:true", body, err)
	}
	resp.Body.Close()
	ev := e.sink.next(t)
	if ev.Text != "stop" || ev.Kind != echogate.KindDirect || ev.SessionKey() != "web:s9" || ev.Actor.ID != "bob" || ev.ID == "" {
		t.Errorf("stop event = %+v, want a direct 'stop' in web:s9 from bob", ev)
	}

	for name, tt := range map[string]struct {
		method, body string
		status       int
		want         string
	}{
		"no session":    {"POST", `{}`, 400, "session is missing"},
		"bad session":   {"POST", `{"session":"a/b"}`, 400, "holds '/'"},
		"unknown field": {"POST", `{"session":"a","text":"x"}`, 400, `the accepted fields are "session" and "user"`},
		"GET":           {"GET", "", 405, "use POST"},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, e.srv.URL+"/api/chat/stop", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if msg := readError(t, resp); !strings.Contains(msg, tt.want) {
				t.Errorf("error = %q, want it to contain %q", msg, tt.want)
			}
		})
	}

	// "stop" typed as a chat message is submitted and answered with a single notice.
	resp = e.post(t, context.Background(), "/api/chat", `{"session":"s9","text":"  Stop "}`)
	defer resp.Body.Close()
	if ev := e.sink.next(t); strings.TrimSpace(ev.Text) != "Stop" {
		t.Errorf("chat stop event text = %q, want Stop", ev.Text)
	}
	got := newSSEReader(resp.Body).rest(t)
	if len(got) != 1 || got[0].Type != "notice" {
		t.Errorf("chat stop stream = %+v, want one notice", got)
	}
}

func TestApprove(t *testing.T) {
	for _, order := range []string{"event first", "prompt first"} {
		t.Run(order, func(t *testing.T) {
			e := newEnv(t, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			resp := e.post(t, ctx, "/api/chat", `{"session":"s","user":"alice","text":"delete it"}`)
			defer resp.Body.Close()
			ev := e.sink.next(t)
			e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "s", ev.ID, ""))
			req := echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Session: "web:s", Turn: "t-" + ev.ID, EventID: ev.ID,
				CallID: "call-1", Tool: "run_command", Args: `{"cmd":"rm"}`, Text: "run_command wants to run"}
			prompt := echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: ev.Conversation, ReplyTo: ev.Message,
				Text: "Approve run_command?", Reactions: []string{"✅", "🔁", "❌"}, Session: "web:s", Turn: "t-" + ev.ID}
			var ref echogate.MessageRef
			var err error
			if order == "event first" {
				e.ch.ObserveTurn(req)
				ref, err = e.ch.Send(ctx, prompt)
			} else {
				ref, err = e.ch.Send(ctx, prompt)
				e.ch.ObserveTurn(req)
			}
			if err != nil || ref != (echogate.MessageRef{Platform: "web", Channel: "s", ID: "m1"}) {
				t.Fatalf("Send(prompt) = %+v, %v, want web/s/m1", ref, err)
			}
			e.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: "web:s", EventID: ev.ID, Status: "paused"})
			got := newSSEReader(resp.Body).rest(t)
			if want := []string{"start", "approval_request", "done"}; !slices.Equal(types(got), want) {
				t.Fatalf("events = %q, want %q", types(got), want)
			}
			if w := got[1].turn(t); w.CallID != "call-1" || (order == "prompt first" && w.PromptID != "m1") {
				t.Errorf("approval_request = %+v, want call-1 (and prompt m1 when sent first)", w)
			}
			snap, _ := e.ch.History("s")
			if len(snap.Pending) != 1 || snap.Pending[0].CallID != "call-1" || snap.Pending[0].PromptID != "m1" || snap.Pending[0].Tool != "run_command" {
				t.Fatalf("pending = %+v, want call-1 on m1", snap.Pending)
			}

			r := e.post(t, ctx, "/api/chat/approve", `{"session":"s","user":"alice","call_id":"call-1","decision":"approve_session"}`)
			if r.StatusCode != 202 {
				t.Fatalf("approve status = %d, want 202: %s", r.StatusCode, readError(t, r))
			}
			r.Body.Close()
			dec := e.sink.next(t)
			if dec.Kind != echogate.KindReaction || dec.Reaction != echogate.ReactionApproveSession || dec.Target != ref ||
				dec.Actor.ID != "alice" || dec.SessionKey() != "web:s" || dec.ID == "" || dec.ID == ev.ID {
				t.Errorf("decision event = %+v, want a 🔁 reaction by alice on %+v", dec, ref)
			}
			// The same prompt by prompt_id still works until the resumed turn starts.
			r = e.post(t, ctx, "/api/chat/approve", `{"session":"s","prompt_id":"m1","decision":"deny"}`)
			if r.StatusCode != 202 {
				t.Fatalf("approve by prompt_id status = %d, want 202: %s", r.StatusCode, readError(t, r))
			}
			r.Body.Close()
			if dec2 := e.sink.next(t); dec2.Reaction != echogate.ReactionDeny || dec2.Actor.ID != "web-user" || dec2.Target != ref {
				t.Errorf("deny event = %+v, want ❌ by web-user on m1", dec2)
			}
			// The resumed turn starts: the prompt is no longer pending.
			e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "s", dec.ID, ""))
			if snap, _ := e.ch.History("s"); len(snap.Pending) != 0 {
				t.Errorf("pending after the resumed turn started = %+v, want none", snap.Pending)
			}
		})
	}
}

func TestApproveErrors(t *testing.T) {
	e := newEnv(t, Config{})
	// A session with an approval_request whose prompt message is not posted yet.
	e.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Session: "web:s", EventID: "x", CallID: "early", Tool: "t"})
	for name, tt := range map[string]struct {
		body       string
		status     int
		want       string
		retryAfter string
	}{
		"bad decision":    {`{"session":"s","call_id":"early","decision":"yes"}`, 400, `decision "yes" is not one of approve, approve_session, deny`, ""},
		"no ids":          {`{"session":"s","decision":"deny"}`, 400, "give call_id", ""},
		"no session":      {`{"call_id":"early","decision":"deny"}`, 400, "session is missing", ""},
		"unknown session": {`{"session":"nope","call_id":"c","decision":"deny"}`, 404, "unknown session", ""},
		"unknown call":    {`{"session":"s","call_id":"c9","decision":"deny"}`, 404, `no pending approval for call "c9"`, ""},
		"unknown prompt":  {`{"session":"s","prompt_id":"m7","decision":"deny"}`, 404, `no pending approval for prompt "m7"`, ""},
		"not posted yet":  {`{"session":"s","call_id":"early","decision":"approve"}`, 409, "not posted yet", "1"},
		"unknown field":   {`{"session":"s","call":"early","decision":"approve"}`, 400, `unknown field "call"`, ""},
		"mismatching ids": {`{"session":"s","call_id":"early","prompt_id":"m3","decision":"approve"}`, 400, "different approvals", ""},
	} {
		t.Run(name, func(t *testing.T) {
			resp := e.post(t, context.Background(), "/api/chat/approve", tt.body)
			if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.retryAfter {
				t.Errorf("status = %d (Retry-After %q), want %d (%q)", resp.StatusCode, resp.Header.Get("Retry-After"), tt.status, tt.retryAfter)
			}
			if msg := readError(t, resp); !strings.Contains(msg, tt.want) {
				t.Errorf("error = %q, want it to contain %q", msg, tt.want)
			}
		})
	}
	e.sink.empty(t)
}

func TestStreamResume(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	pctx, pcancel := context.WithCancel(ctx)
	resp := e.post(t, pctx, "/api/chat", `{"session":"r","text":"count"}`)
	ev := e.sink.next(t)
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "r", ev.ID, ""))
	e.ch.ObserveTurn(turnEv(echogate.TurnDelta, "r", ev.ID, "one "))
	rd := newSSEReader(resp.Body)
	first, second := rd.nextEvent(t), rd.nextEvent(t)
	if first.ID != "1" || second.ID != "2" {
		t.Fatalf("first ids = %s, %s, want 1, 2", first.ID, second.ID)
	}
	pcancel() // the client loses the connection
	resp.Body.Close()
	e.ch.ObserveTurn(turnEv(echogate.TurnDelta, "r", ev.ID, "two "))

	// Re-attach after id 2: event 3 is replayed, then live events follow until done.
	resp = e.get(t, ctx, "/api/chat/stream?session=r", map[string]string{"Last-Event-ID": "2"})
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream status = %d, want 200", resp.StatusCode)
	}
	rd = newSSEReader(resp.Body)
	if got := rd.nextEvent(t); got.ID != "3" || got.turn(t).Text != "two " {
		t.Fatalf("replayed = %+v, want id 3 'two '", got)
	}
	e.ch.ObserveTurn(turnEv(echogate.TurnDelta, "r", ev.ID, "three"))
	e.ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: "web:r", EventID: ev.ID, Text: "one two three", Status: "done"})
	got := rd.rest(t)
	if len(got) != 2 || got[0].ID != "4" || got[1].ID != "5" || got[1].Type != "done" {
		t.Fatalf("live events = %+v, want ids 4 (delta) and 5 (done)", got)
	}

	for name, tt := range map[string]struct {
		query, last string
		status      int
		ids         []string
	}{
		"no id replays the latest turn": {"session=r", "", 200, []string{"1", "2", "3", "4", "5"}},
		"after an id replays the rest":  {"session=r", "3", 200, []string{"4", "5"}},
		"query last_event_id":           {"session=r&last_event_id=4", "", 200, []string{"5"}},
		"all seen: nothing to do":       {"session=r", "5", 204, nil},
		"id from before a restart":      {"session=r", "99", 200, []string{"1", "2", "3", "4", "5"}},
		"unknown session":               {"session=zz", "", 204, nil},
		"bad id":                        {"session=r", "abc", 400, nil},
		"no session":                    {"", "", 400, nil},
	} {
		t.Run(name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.last != "" {
				hdr["Last-Event-ID"] = tt.last
			}
			resp := e.get(t, ctx, "/api/chat/stream?"+tt.query, hdr)
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status != 200 {
				return
			}
			var ids []string
			for _, g := range newSSEReader(resp.Body).rest(t) {
				ids = append(ids, g.ID)
			}
			if !slices.Equal(ids, tt.ids) {
				t.Errorf("ids = %q, want %q", ids, tt.ids)
			}
		})
	}

	// A second turn: the latest-turn replay starts at its start event.
	resp2 := e.post(t, ctx, "/api/chat", `{"session":"r","text":"again"}`)
	defer resp2.Body.Close()
	ev2 := e.sink.next(t)
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "r", ev2.ID, ""))
	r3 := e.get(t, ctx, "/api/chat/stream?session=r", nil)
	defer r3.Body.Close()
	rd3 := newSSEReader(r3.Body)
	if got := rd3.nextEvent(t); got.ID != "6" || got.Type != "start" {
		t.Fatalf("re-attach without id = %+v, want the running turn's start (6)", got)
	}
	e.ch.ObserveTurn(turnEv(echogate.TurnDone, "r", ev2.ID, "ok"))
	if got := types(rd3.rest(t)); !slices.Equal(got, []string{"done"}) {
		t.Errorf("re-attached follow = %q, want [done]", got)
	}
}

func TestStreamFollowsAQueuedTurn(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	pctx, pcancel := context.WithCancel(ctx)
	resp := e.post(t, pctx, "/api/chat", `{"session":"q","text":"later"}`)
	ev := e.sink.next(t)
	pcancel()
	resp.Body.Close()
	// The turn has not started; re-attaching waits for it.
	r := e.get(t, ctx, "/api/chat/stream?session=q", nil)
	defer r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("status = %d, want 200 while the message is queued", r.StatusCode)
	}
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "q", ev.ID, ""))
	e.ch.ObserveTurn(turnEv(echogate.TurnDone, "q", ev.ID, "done"))
	if got := types(newSSEReader(r.Body).rest(t)); !slices.Equal(got, []string{"start", "done"}) {
		t.Errorf("events = %q, want [start done]", got)
	}
}

func TestHeartbeat(t *testing.T) {
	e := newEnv(t, Config{Heartbeat: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp := e.post(t, ctx, "/api/chat", `{"session":"h","text":"slow"}`)
	defer resp.Body.Close()
	e.sink.next(t)
	rd := newSSEReader(resp.Body)
	pings := 0
	for pings < 2 {
		ev, err := rd.next()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if ev.Comment == "ping" {
			pings++
		} else {
			t.Fatalf("got %+v, want only ': ping' comments while the turn is silent", ev)
		}
	}
}

func TestStreamTimeout(t *testing.T) {
	e := newEnv(t, Config{StreamTimeout: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp := e.post(t, ctx, "/api/chat", `{"session":"to","text":"never answered"}`)
	defer resp.Body.Close()
	e.sink.next(t)
	got := newSSEReader(resp.Body).rest(t)
	if len(got) != 1 || got[0].Type != "notice" || !strings.Contains(got[0].Data, "re-attach") {
		t.Errorf("events = %+v, want one notice telling to re-attach", got)
	}
}

func TestSlowClientNeverBlocksObserve(t *testing.T) {
	e := newEnv(t, Config{SubscriberBuffer: 4, ReplayEvents: 64})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp := e.post(t, ctx, "/api/chat", `{"session":"slow","text":"flood"}`)
	defer resp.Body.Close()
	ev := e.sink.next(t)
	// The client reads nothing while 20000 events (megabytes) are observed: ObserveTurn must
	// return regardless (the test would time out otherwise).
	big := strings.Repeat("x", 512)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20000 {
			e.ch.ObserveTurn(turnEv(echogate.TurnDelta, "slow", ev.ID, big))
		}
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("ObserveTurn blocked on a client that does not read")
	}
	// The client fell behind: its stream ends without a done; it re-attaches with the last id.
	var last string
	rd := newSSEReader(resp.Body)
	for {
		ev, err := rd.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if ev.ID != "" {
			last = ev.ID
		}
		if ev.Type == "done" {
			t.Fatalf("a dropped stream delivered done")
		}
	}
	e.ch.ObserveTurn(turnEv(echogate.TurnDone, "slow", ev.ID, "end"))
	r := e.get(t, ctx, "/api/chat/stream?session=slow", map[string]string{"Last-Event-ID": last})
	defer r.Body.Close()
	got := newSSEReader(r.Body).rest(t)
	if len(got) == 0 || got[len(got)-1].Type != "done" {
		t.Fatalf("resume after a drop = %d events ending %q, want done last", len(got), types(got)[max(0, len(got)-3):])
	}
	// Either the stream fell further behind than the buffer holds (a gap notice comes first) or
	// the resume continues right after the last event received.
	if n, _ := strconv.Atoi(last); last != "" && got[0].Type != "notice" && got[0].ID != strconv.Itoa(n+1) {
		t.Fatalf("resume after %s starts with %s %s, want a gap notice or event %d", last, got[0].Type, got[0].ID, n+1)
	}
	if id := got[len(got)-1].ID; id != "20001" {
		t.Errorf("last resumed id = %s, want 20001", id)
	}
}

func TestSendRecordsAndNotifies(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	conv := echogate.ConversationRef{Platform: "web", Channel: "n", DM: true}

	// No turn runs: the notice is an SSE event.
	ref, err := e.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutNotice, Conversation: conv, Text: "turn timed out"})
	if err != nil || ref != (echogate.MessageRef{Platform: "web", Channel: "n", ID: "m1"}) {
		t.Fatalf("Send = %+v, %v, want web/n/m1", ref, err)
	}
	r := e.get(t, ctx, "/api/chat/stream?session=n", nil)
	got := newSSEReader(r.Body).rest(t)
	r.Body.Close()
	if len(got) != 1 || got[0].Type != "notice" {
		t.Fatalf("stream = %+v, want the notice", got)
	}
	if w := got[0].turn(t); w.Text != "turn timed out" || w.MessageID != "m1" || w.Kind != "notice" {
		t.Errorf("notice = %+v, want text, message m1, kind notice", w)
	}

	// During a turn Send emits nothing: the turn's events show the answer.
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "n", "ev1", ""))
	before, _ := e.ch.History("n")
	ref2, err := e.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Text: "the answer"})
	after, _ := e.ch.History("n")
	if err != nil || ref2.ID != "m2" || after.LastEventID != before.LastEventID {
		t.Errorf("Send during a turn = %+v, %v, last event %d→%d, want m2 and no event", ref2, err, before.LastEventID, after.LastEventID)
	}
	if n := len(after.Messages); n != 2 || after.Messages[1].Role != "assistant" || after.Messages[1].Text != "the answer" {
		t.Errorf("history = %+v, want the notice and the answer", after.Messages)
	}

	// Session given by key only; wrong platform; bad session; cancelled ctx.
	if ref, err := e.ch.Send(ctx, echogate.Outbound{Session: "web:k", Text: "x"}); err != nil || ref.Channel != "k" {
		t.Errorf("Send by session key = %+v, %v, want channel k", ref, err)
	}
	if _, err := e.ch.Send(ctx, echogate.Outbound{Conversation: echogate.ConversationRef{Platform: "slack", Channel: "C1"}}); !errors.Is(err, ErrWrongPlatform) {
		t.Errorf("Send to slack = %v, want ErrWrongPlatform", err)
	}
	if _, err := e.ch.Send(ctx, echogate.Outbound{Conversation: echogate.ConversationRef{Platform: "web", Channel: "a b"}}); !errors.Is(err, ErrBadSession) {
		t.Errorf("Send to 'a b' = %v, want ErrBadSession", err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := e.ch.Send(cctx, echogate.Outbound{Conversation: conv}); !errors.Is(err, context.Canceled) {
		t.Errorf("Send(cancelled) = %v, want context.Canceled", err)
	}
}

func TestReplyWithoutTurnEndsTheRequest(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp := e.post(t, ctx, "/api/chat", `{"session":"b","text":"hi"}`)
	defer resp.Body.Close()
	ev := e.sink.next(t)
	// The pipeline answers without a turn (e.g. the daily budget is spent).
	if _, err := e.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: "budget spent"}); err != nil {
		t.Fatal(err)
	}
	got := newSSEReader(resp.Body).rest(t)
	if !slices.Equal(types(got), []string{"notice", "done"}) || got[1].turn(t).Text != "budget spent" {
		t.Errorf("events = %+v, want notice and done carrying the reply", got)
	}
}

func TestClientMessageIDIsIdempotent(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	body := `{"session":"i","text":"once","id":"msg-1"}`
	pctx, pcancel := context.WithCancel(ctx)
	resp := e.post(t, pctx, "/api/chat", body)
	ev := e.sink.next(t)
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "i", ev.ID, ""))
	pcancel()
	resp.Body.Close()

	// The client retries the same message: no second submission, the stream continues the turn.
	resp = e.post(t, ctx, "/api/chat", body)
	defer resp.Body.Close()
	e.ch.ObserveTurn(turnEv(echogate.TurnDone, "i", ev.ID, "answer"))
	if got := types(newSSEReader(resp.Body).rest(t)); !slices.Equal(got, []string{"start", "done"}) {
		t.Errorf("retried stream = %q, want [start done]", got)
	}
	// Once more after the turn ended: a replay, still no second submission.
	resp3 := e.post(t, ctx, "/api/chat", body)
	defer resp3.Body.Close()
	if got := types(newSSEReader(resp3.Body).rest(t)); !slices.Equal(got, []string{"start", "done"}) {
		t.Errorf("replayed stream = %q, want [start done]", got)
	}
	e.sink.empty(t)
	if snap, _ := e.ch.History("i"); len(snap.Messages) != 1 {
		t.Errorf("history = %+v, want the message once", snap.Messages)
	}
}

func TestObserveIgnoresOtherPlatforms(t *testing.T) {
	ch, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDelta, Session: "slack:C1:1.2"})
	ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDelta, Session: "web:bad id"})
	if n := len(ch.sessions); n != 0 {
		t.Errorf("sessions after foreign events = %d, want 0", n)
	}
}

func TestEviction(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ch, err := New(Config{Now: clock, IdleTimeout: time.Minute, MaxSessions: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.ObserveTurn(turnEv(echogate.TurnDelta, "old", "e", "x"))
	advance(30 * time.Second)
	ch.ObserveTurn(turnEv(echogate.TurnDelta, "attached", "e", "x"))
	ch.mu.Lock()
	sub := ch.sessions["attached"].subscribe("")
	ch.mu.Unlock()
	ch.ObserveTurn(turnEv(echogate.TurnDelta, "new", "e", "x"))

	// Full: a fourth session evicts the least recently active one without a client ("old").
	ch.ObserveTurn(turnEv(echogate.TurnDelta, "fourth", "e", "x"))
	if _, ok := ch.History("old"); ok {
		t.Errorf("History(old) live after the cap was hit, want evicted")
	}
	advance(2 * time.Minute)
	if n, _ := ch.evictIdle(clock()); n != 2 {
		t.Errorf("evictIdle = %d, want 2 (new, fourth; attached has a client)", n)
	}
	if _, ok := ch.History("attached"); !ok {
		t.Errorf("History(attached) evicted, want kept while a client is attached")
	}
	ch.mu.Lock()
	ch.sessions["attached"].unsubscribe(sub)
	ch.mu.Unlock()
	if n, _ := ch.evictIdle(clock()); n != 1 {
		t.Errorf("evictIdle after the client left = %d, want 1", n)
	}

	// Every session attached: a new one is refused.
	ch2, _ := New(Config{MaxSessions: 1}, nil)
	ch2.ObserveTurn(turnEv(echogate.TurnDelta, "a", "e", "x"))
	ch2.mu.Lock()
	ch2.sessions["a"].subscribe("")
	ch2.mu.Unlock()
	if _, err := ch2.Send(context.Background(), echogate.Outbound{Conversation: echogate.ConversationRef{Platform: "web", Channel: "b"}}); !errors.Is(err, ErrTooManySessions) {
		t.Errorf("Send to a new session when full = %v, want ErrTooManySessions", err)
	}
}

func TestReplayBufferIsBounded(t *testing.T) {
	ch, _ := New(Config{ReplayEvents: 8}, nil)
	for i := range 20 {
		ch.ObserveTurn(turnEv(echogate.TurnToolResult, "b", "e", strconv.Itoa(i)))
	}
	ch.mu.Lock()
	s := ch.sessions["b"]
	all := s.events.items()
	after, gap := s.replayAfter(3)
	ch.mu.Unlock()
	if len(all) != 8 || all[0].Seq != 13 || all[7].Seq != 20 {
		t.Errorf("buffer = %d events %d..%d, want 8 events 13..20", len(all), all[0].Seq, all[len(all)-1].Seq)
	}
	if !gap || len(after) != 8 {
		t.Errorf("replayAfter(3) = %d events, gap %v, want 8 and a gap", len(after), gap)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	ch, _ := New(Config{HistoryMessages: 3}, nil)
	conv := echogate.ConversationRef{Platform: "web", Channel: "h"}
	for i := range 5 {
		if _, err := ch.Send(context.Background(), echogate.Outbound{Conversation: conv, Text: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	snap, _ := ch.History("h")
	var texts []string
	for _, m := range snap.Messages {
		texts = append(texts, m.Text)
	}
	if !slices.Equal(texts, []string{"2", "3", "4"}) {
		t.Errorf("history = %q, want the last three", texts)
	}
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"negative heartbeat": {Heartbeat: -1},
		"negative buffer":    {SubscriberBuffer: -1},
		"bad default user":   {DefaultUser: "a\x00b"},
	} {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("New(%s) error = nil, want an error", name)
		}
	}
	ch, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := ch.cfg; c.Heartbeat != 15*time.Second || c.MaxTextBytes != 32<<10 || c.ReplayEvents != 512 || c.IdleTimeout != 15*time.Minute || c.DefaultUser != "web-user" {
		t.Errorf("defaults = %+v", c)
	}
}

func TestPageAndAssets(t *testing.T) {
	e := newEnv(t, Config{})
	for name, tt := range map[string]struct {
		method, path string
		status       int
		ctype, body  string
	}{
		"page":        {"GET", "/", 200, "text/html", "<title>echogate chat</title>"},
		"script":      {"GET", "/assets/app.js", 200, "javascript", "api/chat"},
		"style":       {"GET", "/assets/app.css", 200, "text/css", "--accent"},
		"no listing":  {"GET", "/assets/", 404, "application/json", "no such file"},
		"missing":     {"GET", "/assets/nope.js", 404, "", ""},
		"post page":   {"POST", "/", 405, "application/json", "use GET"},
		"unknown api": {"GET", "/api/nope", 404, "application/json", "no such endpoint"},
		"history":     {"GET", "/api/chat/history?session=none", 200, "application/json", `"messages":[]`},
		"history bad": {"GET", "/api/chat/history?session=a%20b", 400, "application/json", "holds ' '"},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, e.srv.URL+tt.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.status)
			}
			if !strings.Contains(resp.Header.Get("Content-Type"), tt.ctype) {
				t.Errorf("Content-Type = %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			if !strings.Contains(string(body), tt.body) {
				t.Errorf("body = %.200q, want it to contain %q", body, tt.body)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Content-Security-Policy") == "" {
				t.Errorf("security headers missing: %v", resp.Header)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	urls := map[channels.Channel]string{}
	n := 0
	post := func(t *testing.T, ch channels.Channel, body []byte) {
		t.Helper()
		mu.Lock()
		url := urls[ch]
		mu.Unlock()
		req, err := http.NewRequest(http.MethodPost, url+"/api/chat", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		// Do returns with the stream's headers, written after the sink was called.
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST /api/chat: %v", err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /api/chat = %d, want 200", resp.StatusCode)
		}
	}
	channeltest.RunConformance(t, channeltest.Harness{
		Open: func(t *testing.T) channels.Channel {
			ch, err := New(Config{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := newTestServer(t, ch)
			mu.Lock()
			urls[ch] = srv.URL
			mu.Unlock()
			return ch
		},
		DirectMessage: func(t *testing.T, ch channels.Channel, user, text string) channeltest.Delivery {
			mu.Lock()
			n++
			session, id := fmt.Sprintf("conf-%d", n), fmt.Sprintf("msg-%d", n)
			mu.Unlock()
			body, _ := json.Marshal(map[string]string{"session": session, "user": user, "text": text, "id": id})
			post(t, ch, body)
			return channeltest.Delivery{Handle: body, Conversation: echogate.ConversationRef{Platform: "web", Channel: session, DM: true}}
		},
		Redeliver: func(t *testing.T, ch channels.Channel, d channeltest.Delivery) {
			post(t, ch, d.Handle.([]byte))
		},
		Posted: func(t *testing.T, ch channels.Channel, conv echogate.ConversationRef) []string {
			snap, _ := ch.(*Channel).History(conv.Channel)
			var out []string
			for _, m := range snap.Messages {
				if m.Role != "user" {
					out = append(out, m.Text)
				}
			}
			return out
		},
	})
}

func newTestServer(t *testing.T, ch *Channel) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(ch.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func TestReplyAfterDoneIsNotRepeated(t *testing.T) {
	ch, _ := New(Config{}, nil)
	conv := echogate.ConversationRef{Platform: "web", Channel: "d"}
	ch.ObserveTurn(turnEv(echogate.TurnStarted, "d", "e1", ""))
	ch.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone, Session: "web:d", Turn: "t1", EventID: "e1", Text: "answer", Status: "done"})
	before, _ := ch.History("d")
	for _, out := range []echogate.Outbound{
		{Kind: echogate.OutReply, Conversation: conv, Turn: "t1", Text: "answer, formatted"},
		{Kind: echogate.OutReply, Conversation: conv, Text: "answer"},
	} {
		if _, err := ch.Send(context.Background(), out); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := ch.History("d")
	if after.LastEventID != before.LastEventID || len(after.Messages) != 2 {
		t.Errorf("after the replies: last event %d→%d, %d messages; want no new event and both recorded", before.LastEventID, after.LastEventID, len(after.Messages))
	}
}

// The replay buffer is bounded by bytes too, and consecutive deltas share an entry while every
// one keeps its own id on replay.
func TestReplayBufferBytes(t *testing.T) {
	ch, _ := New(Config{ReplayBytes: 64 << 10}, nil)
	for i := range 1000 {
		ch.ObserveTurn(turnEv(echogate.TurnDelta, "b", "e", strings.Repeat("x", 100)+strconv.Itoa(i)))
	}
	ch.mu.Lock()
	s := ch.sessions["b"]
	entries, size := len(s.events.buf), s.events.bytes
	all := s.events.items()
	ch.mu.Unlock()
	if size > 64<<10+maxMerged || entries > 8 {
		t.Errorf("buffer = %d entries, %d bytes; want about 64 KiB in a few entries", entries, size)
	}
	last := all[len(all)-1]
	if last.Seq != 1000 || last.Text != strings.Repeat("x", 100)+"999" {
		t.Errorf("last replayed event = %d %q, want id 1000 with its own text", last.Seq, last.Text)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq != all[i-1].Seq+1 {
			t.Fatalf("replayed ids jump from %d to %d", all[i-1].Seq, all[i].Seq)
		}
	}
}
