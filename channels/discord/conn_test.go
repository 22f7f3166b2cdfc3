package discord

import (
	"context"
	"net"
	"testing"
)

// TestStillConnectedFollowsTheSocket: Run's watch takes a Disconnect signal for the current
// connection only when the socket it dialed last was closed. discordgo's DataReady is no
// guide: the old connection's heartbeat goroutine sets it again after Close when its write
// finished just before Close took the session lock, and a dead connection then looked alive
// (TestWireReconnectStormOpensBreaker timed out waiting for a reconnect that never came).
func TestStillConnectedFollowsTheSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	go func() {
		defer close(accepted)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for conn := range accepted { // until the accept loop ended
			_ = conn.Close()
		}
	})
	c, err := New(Config{Token: "t", APIURL: "http://127.0.0.1:1/api/v9/"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	dial := func() net.Conn {
		conn, err := c.conns.dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	// discordgo's heartbeat set DataReady after the close in every row: it must not matter.
	c.sess.DataReady = true

	if c.stillConnected() {
		t.Errorf("stillConnected() before any dial = true, want false")
	}
	first := dial()
	if !c.stillConnected() {
		t.Errorf("stillConnected() with the dialed socket open = false, want true")
	}
	_ = first.Close()
	if c.stillConnected() {
		t.Errorf("stillConnected() after its socket closed (DataReady set again) = true, want false: the drop would go unnoticed")
	}
	second := dial()
	_ = first.Close() // the old connection's second Close (its heartbeat goroutine): a late signal
	if !c.stillConnected() {
		t.Errorf("stillConnected() after a late close of the previous socket = false, want true")
	}
	c.conns.closeLatest()
	if c.stillConnected() {
		t.Errorf("stillConnected() after closeLatest = true, want false")
	}
	_ = second.Close()
}
