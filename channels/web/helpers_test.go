package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

const waitLimit = 10 * time.Second

// fakeSink records accepted events and fails with err when set.
type fakeSink struct {
	mu     sync.Mutex
	err    error
	events chan echogate.InboundEvent
}

func newFakeSink() *fakeSink { return &fakeSink{events: make(chan echogate.InboundEvent, 128)} }

func (s *fakeSink) sink(ctx context.Context, ev echogate.InboundEvent) error {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case s.events <- ev:
		return nil
	default:
		return errors.New("test sink full")
	}
}

func (s *fakeSink) setErr(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *fakeSink) next(t *testing.T) echogate.InboundEvent {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case ev := <-s.events:
		return ev
	case <-timer.C:
		t.Fatalf("no event reached the sink within %s", waitLimit)
	}
	return echogate.InboundEvent{}
}

func (s *fakeSink) empty(t *testing.T) {
	t.Helper()
	select {
	case ev := <-s.events:
		t.Errorf("unexpected event reached the sink: %+v", ev)
	default:
	}
}

// env is a running web channel behind an httptest server.
type env struct {
	ch   *Channel
	srv  *httptest.Server
	sink *fakeSink
	stop func() // ends Run and waits for it
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	ch, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", cfg, err)
	}
	e := &env{ch: ch, sink: newFakeSink()}
	e.srv = httptest.NewServer(ch.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, e.sink.sink) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		})
	}
	t.Cleanup(func() {
		e.stop()
		e.srv.Close()
	})
	select {
	case <-ch.started:
	case <-time.After(waitLimit):
		t.Fatalf("Run did not start within %s", waitLimit)
	}
	return e
}

func (e *env) post(t *testing.T, ctx context.Context, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

func (e *env) get(t *testing.T, ctx context.Context, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp
}

// sseEvent is one parsed SSE block: an event, or a comment when Comment is set.
type sseEvent struct {
	ID      string
	Type    string
	Data    string
	Comment string
}

func (e sseEvent) turn(t *testing.T) wireEvent {
	t.Helper()
	var w wireEvent
	if err := json.Unmarshal([]byte(e.Data), &w); err != nil {
		t.Fatalf("event data %q is not JSON: %v", e.Data, err)
	}
	return w
}

// sseReader is a minimal text/event-stream parser.
type sseReader struct{ r *bufio.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// next returns the next block; io.EOF at the end of the stream.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && seen {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		seen = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			ev.Comment = strings.TrimSpace(c)
			continue
		}
		field, val, _ := strings.Cut(line, ":")
		val = strings.TrimPrefix(val, " ")
		switch field {
		case "id":
			ev.ID = val
		case "event":
			ev.Type = val
		case "data":
			if ev.Data != "" {
				ev.Data += "\n"
			}
			ev.Data += val
		}
	}
}

// nextEvent skips comments.
func (s *sseReader) nextEvent(t *testing.T) sseEvent {
	t.Helper()
	for {
		ev, err := s.next()
		if err != nil {
			t.Fatalf("reading SSE: %v", err)
		}
		if ev.Comment == "" || ev.Type != "" || ev.Data != "" {
			return ev
		}
	}
}

// rest reads events (not comments) to the end of the stream.
func (s *sseReader) rest(t *testing.T) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev, err := s.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading SSE: %v", err)
		}
		if ev.Type != "" || ev.Data != "" {
			out = append(out, ev)
		}
	}
}

func types(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func turnEv(typ echogate.TurnEventType, session, eventID, text string) echogate.TurnEvent {
	return echogate.TurnEvent{Type: typ, Session: echogate.SessionKey("web:" + session), Turn: "t-" + eventID, EventID: eventID, Text: text}
}
