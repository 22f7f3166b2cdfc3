package discord

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// connTracker remembers the latest dialed gateway connection so a stuck Open can be aborted,
// and whether it was closed since (see stillConnected).
type connTracker struct {
	timeout time.Duration
	mu      sync.Mutex
	latest  *trackedConn
}

// trackedConn is a dialed connection that records its Close: discordgo closes its websocket
// (and so this connection) before it emits Disconnect.
type trackedConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *trackedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: t.timeout, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn}
	t.mu.Lock()
	t.latest = tc
	t.mu.Unlock()
	return tc, nil
}

// latestOpen reports whether the connection dialed last exists and was not closed.
func (t *connTracker) latestOpen() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latest != nil && !t.latest.closed.Load()
}

func (t *connTracker) closeLatest() {
	t.mu.Lock()
	conn := t.latest
	t.latest = nil
	t.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}
