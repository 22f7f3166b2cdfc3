package discord

import (
	"fmt"
	"time"
)

// connState is what Ready reports.
type connState struct {
	connected   bool
	detail      string
	connectedAt time.Time
	ackValue    time.Time     // discordgo's LastHeartbeatAck when last observed
	ackSeenAt   time.Time     // our clock when ackValue last changed
	ackChanges  int           // how often ackValue changed on this connection
	ackGap      time.Duration // largest gap between consecutive ACKs on this connection
}

// Ready reports whether the gateway connection is up and healthy: connected, and heartbeat ACKs
// arriving (a connection without ACKs for two heartbeat intervals is a zombie and reports false).
// It never blocks.
func (c *Channel) Ready() (bool, string) {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	if !st.connected {
		return false, st.detail
	}
	now := c.clock.Now()
	if silent, limit := now.Sub(st.ackSeenAt), c.ackLimit(st); silent > limit {
		return false, fmt.Sprintf("zombie connection: no heartbeat ACK for %s (limit %s)", silent.Round(time.Millisecond), limit)
	}
	return true, st.detail
}

// ackLimit is how long a connection may go without a heartbeat ACK: two measured heartbeat
// intervals (plus one health check period) once measured, else Config.HeartbeatTimeout.
func (c *Channel) ackLimit(st connState) time.Duration {
	if st.ackChanges >= 2 && st.ackGap > 0 {
		return 2*st.ackGap + c.cfg.HealthInterval
	}
	return c.cfg.HeartbeatTimeout
}

func (c *Channel) setDown(detail string) {
	c.mu.Lock()
	c.state.connected = false
	c.state.detail = detail
	c.mu.Unlock()
}

// stillConnected reports whether the gateway connection dialed last is still open: a Disconnect
// signal seen while it is came from an earlier connection (discordgo's reader and heartbeat
// goroutines may each close the old one). discordgo's DataReady cannot tell: the old
// connection's heartbeat goroutine sets it again when its write finished just before Close
// took the session lock, so a dead connection looked alive and was never replaced.
func (c *Channel) stillConnected() bool { return c.conns.latestOpen() }

// markConnected records a fresh connection.
func (c *Channel) markConnected() {
	c.sess.RLock()
	ack := c.sess.LastHeartbeatAck
	c.sess.RUnlock()
	now := c.clock.Now()
	detail := fmt.Sprintf("connected (shard %d/%d)", c.cfg.ShardID, c.cfg.ShardCount)
	if name := c.botName.Load(); name != nil && *name != "" {
		detail = fmt.Sprintf("connected as %s (shard %d/%d)", *name, c.cfg.ShardID, c.cfg.ShardCount)
	}
	c.mu.Lock()
	c.state = connState{connected: true, detail: detail, connectedAt: now, ackValue: ack, ackSeenAt: now}
	c.mu.Unlock()
	c.log.Info("discord: gateway connected", "shard", c.cfg.ShardID, "shard_count", c.cfg.ShardCount)
}

// checkHeartbeat observes discordgo's last heartbeat ACK, measures the heartbeat interval from the
// gaps between ACKs and reports whether the connection is still alive.
func (c *Channel) checkHeartbeat() (bool, string) {
	c.sess.RLock()
	ack := c.sess.LastHeartbeatAck
	c.sess.RUnlock()
	now := c.clock.Now()
	c.mu.Lock()
	if !ack.Equal(c.state.ackValue) {
		if gap := ack.Sub(c.state.ackValue); gap > c.state.ackGap {
			c.state.ackGap = gap
		}
		c.state.ackValue = ack
		c.state.ackSeenAt = now
		c.state.ackChanges++
	}
	st := c.state
	c.mu.Unlock()
	if silent, limit := now.Sub(st.ackSeenAt), c.ackLimit(st); silent > limit {
		return false, fmt.Sprintf("zombie connection: no heartbeat ACK for %s (limit %s); reconnecting", silent.Round(time.Millisecond), limit)
	}
	return true, ""
}

func (c *Channel) setDownIfNotConnected(detail string) {
	c.mu.Lock()
	if !c.state.connected {
		c.state.detail = detail
	}
	c.mu.Unlock()
}
