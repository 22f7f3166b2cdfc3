package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/channels/slack/slacktest"
)

// TestSocketConnectionsPerReplica: with SocketConnections 3 the channel opens three Socket Mode
// connections; Slack spreads events over them, and each event is acknowledged on the
// connection it came on and reaches the sink once. A count past Slack's 10 per app is refused.
func TestSocketConnectionsPerReplica(t *testing.T) {
	e := newEnv(t, true, func(c *Config) { c.SocketConnections = 3 })
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.WaitFor(wctx, func() bool { return e.srv.OpenConnections() == 3 }); err != nil {
		t.Fatalf("OpenConnections = %d, want 3: %v", e.srv.OpenConnections(), err)
	}
	const n = 12
	for i := range n {
		e.srv.Deliver(slacktest.DM(fmt.Sprintf("D%d", i), "U1", fmt.Sprintf("1700000000.%06d", i), "hello"), slacktest.Delivery{})
	}
	if err := e.srv.WaitFor(wctx, func() bool { return e.srv.Unacknowledged() == 0 }); err != nil {
		t.Fatalf("%d of %d events unacknowledged: %v", e.srv.Unacknowledged(), n, err)
	}
	e.rec.waitEvents(n)
	if evs, _ := e.rec.snapshot(); len(evs) != n {
		t.Errorf("sink got %d events, want %d", len(evs), n)
	}

	_, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", SocketConnections: 11}, nil)
	if err == nil || !strings.Contains(err.Error(), "10") {
		t.Errorf("New(SocketConnections 11) = %v, want an error naming Slack's limit of 10", err)
	}
}
