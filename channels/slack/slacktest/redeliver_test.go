package slacktest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// envelope is what a test client reads of a Socket Mode message.
type envelope struct {
	Type         string `json:"type"`
	EnvelopeID   string `json:"envelope_id"`
	RetryAttempt int    `json:"retry_attempt"`
	Payload      struct {
		EventID string `json:"event_id"`
	} `json:"payload"`
}

func dialSocket(t *testing.T, s *Server) *websocket.Conn {
	t.Helper()
	u := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/socket"
	c, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hello envelope
	if err := c.ReadJSON(&hello); err != nil || hello.Type != "hello" {
		t.Fatalf("first message = %+v, %v; want hello", hello, err)
	}
	return c
}

func readEnvelope(t *testing.T, c *websocket.Conn) envelope {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var e envelope
		if err := c.ReadJSON(&e); err != nil {
			t.Fatalf("read an envelope: %v", err)
		}
		if e.Type == "events_api" {
			return e
		}
	}
}

func waitServer(t *testing.T, s *Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// received is an envelope and the index of the client connection that read it.
type received struct {
	conn int
	env  envelope
}

// readAll reads envelopes of c until it closes, sending each to out tagged with i.
func readAll(c *websocket.Conn, i int, out chan<- received) {
	for {
		var e envelope
		if c.ReadJSON(&e) != nil {
			return
		}
		if e.Type == "events_api" {
			out <- received{i, e}
		}
	}
}

func next(t *testing.T, in <-chan received) received {
	t.Helper()
	select {
	case r := <-in:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no envelope within 10s")
		return received{}
	}
}

// TestDeliverRedeliversOnAnotherConnection: an event Deliver sent to a connection that closes
// without acknowledging it goes again, with retry_attempt 1, the same event id and a new
// envelope, to the connection still open; once that one acknowledges it nothing waits.
func TestDeliverRedeliversOnAnotherConnection(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	conns := []*websocket.Conn{dialSocket(t, s), dialSocket(t, s)}
	defer conns[0].Close()
	defer conns[1].Close()
	waitServer(t, s, "two connections", func() bool { return s.OpenConnections() == 2 })
	in := make(chan received, 4)
	for i, c := range conns {
		go readAll(c, i, in)
	}
	id := s.Deliver(DM("D1", "U1", "1.000100", "hello"), Delivery{})
	first := next(t, in)
	if first.env.Payload.EventID != id || first.env.RetryAttempt != 0 {
		t.Fatalf("first delivery = %+v, want event %s attempt 0", first.env, id)
	}
	_ = conns[first.conn].Close() // no ack
	again := next(t, in)
	if again.conn == first.conn || again.env.Payload.EventID != id || again.env.RetryAttempt != 1 || again.env.EnvelopeID == first.env.EnvelopeID {
		t.Fatalf("redelivery = %+v on connection %d, want event %s, attempt 1, a new envelope, on the other connection (first %+v on %d)",
			again.env, again.conn, id, first.env, first.conn)
	}
	if err := conns[again.conn].WriteJSON(map[string]string{"envelope_id": again.env.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	waitServer(t, s, "the ack", func() bool { return s.Unacknowledged() == 0 })
	if n := s.Redeliveries(); n != 1 {
		t.Errorf("Redeliveries() = %d, want 1", n)
	}
}

// TestDeliverWaitsForAConnection: with no connection open, Deliver keeps the event and sends
// it (attempt 0) on the first connection that opens.
func TestDeliverWaitsForAConnection(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	id := s.Deliver(DM("D1", "U1", "1.000100", "hello"), Delivery{})
	if n := s.Unacknowledged(); n != 1 {
		t.Fatalf("Unacknowledged() = %d, want 1", n)
	}
	c := dialSocket(t, s)
	defer c.Close()
	e := readEnvelope(t, c)
	if e.Payload.EventID != id || e.RetryAttempt != 0 {
		t.Fatalf("delivery = %+v, want event %s attempt 0", e, id)
	}
	b, _ := json.Marshal(map[string]string{"envelope_id": e.EnvelopeID})
	if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
		t.Fatal(err)
	}
	waitServer(t, s, "the ack", func() bool { return s.Unacknowledged() == 0 })
}
