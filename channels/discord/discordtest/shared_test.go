package discordtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// identified opens a gateway connection and identifies on shard [0, 1]; it returns the
// connection once READY arrived.
func identified(t *testing.T, s *Server) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(s.GatewayURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hello payload
	if err := c.ReadJSON(&hello); err != nil || hello.Op != 10 {
		t.Fatalf("first payload = %+v, %v; want Hello (op 10)", hello, err)
	}
	id, _ := json.Marshal(map[string]any{"token": "Bot " + s.Token(), "intents": 0, "shard": []int{0, 1}})
	if err := c.WriteJSON(payload{Op: 2, D: id}); err != nil {
		t.Fatal(err)
	}
	if typ := nextDispatch(t, c); typ != "READY" {
		t.Fatalf("dispatch after Identify = %s, want READY", typ)
	}
	return c
}

func nextDispatch(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var p payload
		if err := c.ReadJSON(&p); err != nil {
			t.Fatalf("read a dispatch: %v", err)
		}
		if p.Op == 0 && p.T != nil {
			return *p.T
		}
	}
}

// TestSharedShardDispatchesToEveryConnection: with SharedShard two connections identified on
// the same shard both stay open and both get a user's message; without it the second
// connection closes the first.
func TestSharedShardDispatchesToEveryConnection(t *testing.T) {
	for name, tt := range map[string]struct {
		shared bool
		want   int
	}{
		"shared shard":   {true, 2},
		"one connection": {false, 1},
	} {
		t.Run(name, func(t *testing.T) {
			s := NewServer(Options{SharedShard: tt.shared, HeartbeatInterval: time.Minute})
			defer s.Close()
			a := identified(t, s)
			defer a.Close()
			b := identified(t, s)
			defer b.Close()
			if got := s.ReadyConnections(); got != tt.want {
				t.Fatalf("ReadyConnections() = %d, want %d", got, tt.want)
			}
			s.SendDM(User{ID: "42", Username: "ann"}, "hello")
			if typ := nextDispatch(t, b); typ != "MESSAGE_CREATE" {
				t.Errorf("second connection: dispatch = %s, want MESSAGE_CREATE", typ)
			}
			if tt.shared {
				if typ := nextDispatch(t, a); typ != "MESSAGE_CREATE" {
					t.Errorf("first connection: dispatch = %s, want MESSAGE_CREATE", typ)
				}
			}
		})
	}
}
