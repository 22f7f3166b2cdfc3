package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

// Config configures the web channel. The zero value means the defaults given per field.
type Config struct {
	// Heartbeat is the interval of the ": ping" SSE comment that keeps idle streams (and the
	// proxies in between) alive. Default 15s.
	Heartbeat time.Duration
	// MaxTextBytes bounds the text of one chat message. Default 32 KiB.
	MaxTextBytes int
	// ReplayEvents is how many entries per session the replay buffer keeps (a run of consecutive
	// deltas is one entry). Default 512.
	ReplayEvents int
	// ReplayBytes bounds the replay buffer of a session by the size of its events. A stream whose
	// client is further behind than the buffer holds is dropped (it re-attaches with
	// Last-Event-ID). Default 512 KiB.
	ReplayBytes int
	// ReplayGrace is how long a session's replay buffer outlives its last turn while no stream
	// is attached: a client may re-attach (GET /api/chat/stream with Last-Event-ID) within it.
	// After it the buffer is given back; the session keeps only its history. Default 15s.
	ReplayGrace time.Duration
	// ReplayTotalBytes bounds the replay buffers of all sessions together. Past it, the buffers
	// of sessions with no running turn and no attached stream are given back, least recently
	// active first, even within ReplayGrace; a running turn's buffer is bounded by ReplayBytes
	// only. Default 32 MiB.
	ReplayTotalBytes int
	// SubscriberBuffer is no longer used: streams read the replay buffer. Accepted for
	// compatibility; a negative value is still an error.
	SubscriberBuffer int
	// IdleTimeout evicts a session that saw no request, event or message for this long and has no
	// client attached. Default 15m.
	IdleTimeout time.Duration
	// JanitorInterval is how often Run looks for idle sessions and finished replay buffers.
	// Default the least of IdleTimeout/4, ReplayGrace/3 and 1m.
	JanitorInterval time.Duration
	// MaxSessions bounds the live sessions; when full, the least recently active session without
	// an attached client is evicted. Default 10000.
	MaxSessions int
	// HistoryMessages is how many messages per session History keeps. Default 200.
	HistoryMessages int
	// HistoryTotalBytes bounds the histories of all sessions together (their messages' text
	// and ids plus about a hundred bytes a message). Past it, the histories of sessions with no
	// running or queued turn and no attached stream are dropped, least recently active first:
	// such a session's History is then empty until its next message. Default 8 MiB.
	HistoryTotalBytes int
	// StreamTimeout ends an SSE stream that waited this long for its turn to finish (the client
	// can re-attach). Default 10m.
	StreamTimeout time.Duration
	// FlushInterval is how long a stream may hold written events before flushing them to the
	// client, so the events of a burst (a fast model's deltas, a turn's closing events) share
	// one write to the socket. The event that ends a stream is sent at once. Default 10ms.
	FlushInterval time.Duration
	// WriteTimeout bounds one write to a client; a client that does not read is disconnected.
	// A write gets at least WriteTimeout and at most one and a half. Default 30s.
	WriteTimeout time.Duration
	// DefaultUser is the user id of requests that name none. Default "web-user".
	DefaultUser string
	// Now is the clock of timestamps and idle eviction. Default time.Now.
	Now func() time.Time
	// IsBackpressure reports whether a sink error means "the session's queue is full, retry
	// shortly" (answered 429 with Retry-After) rather than "not accepting" (503). Errors wrapping
	// *echogate.RetryAfterError or with a Temporary() bool method returning true are
	// back-pressure without it. cmd wires errors.Is(err, pipeline.ErrMailboxFull) here.
	IsBackpressure func(error) bool
	// Authenticated reports whether a request proved who sent it; only such a request may use a
	// console name (IsConsoleName). Default LocalRequest (from this machine, by a loopback name);
	// cmd passes the server's one authentication rule (Auth.Allows).
	Authenticated func(*http.Request) bool
	// Stored returns what the store holds of a session (its latest limit transcript messages,
	// oldest first, and its pending approval), so that GET /api/chat/history shows a session's
	// earlier turns, tool calls and approval after a restart or once the channel forgot it
	// (stored.go). nil: the channel's own memory only.
	Stored func(ctx context.Context, session string, limit int) (Stored, error)
	// StoredPrompt finds the prompt of a session's pending approval of call callID in the
	// gateway's store, for an approval this process never asked: another replica paused the
	// turn, or this process restarted since. POST /api/chat/approve asks it when the session
	// or the call is unknown here; a zero ref with ok true is a stored pause whose prompt's
	// reference was never saved (the decision then names no message). nil: not asked (one
	// process, nothing shared).
	StoredPrompt func(ctx context.Context, conv echogate.ConversationRef, callID string) (echogate.MessageRef, bool)
}

const (
	defaultHeartbeat       = 15 * time.Second
	defaultMaxTextBytes    = 32 << 10
	defaultReplayEvents    = 512
	defaultReplayBytes     = 512 << 10
	defaultReplayGrace     = 15 * time.Second
	defaultReplayTotal     = 32 << 20
	defaultIdleTimeout     = 15 * time.Minute
	defaultMaxSessions     = 10000
	defaultHistoryMessages = 200
	defaultHistoryTotal    = 8 << 20
	defaultStreamTimeout   = 10 * time.Minute
	defaultWriteTimeout    = 30 * time.Second
	defaultFlushInterval   = 10 * time.Millisecond
	defaultUser            = "web-user"
)

// withDefaults checks c (no negative sizes or durations, a valid DefaultUser) and fills in the
// default of every field left zero.
func (c Config) withDefaults() (Config, error) {
	if err := c.checkNonNegative(); err != nil {
		return c, err
	}
	c.fillDefaults()
	c.DefaultUser = strings.TrimSpace(c.DefaultUser)
	if c.DefaultUser == "" {
		c.DefaultUser = defaultUser
	}
	if msg := checkUser(c.DefaultUser); msg != "" {
		return c, fmt.Errorf("web: config DefaultUser: %s", msg)
	}
	return c, nil
}

// checkNonNegative refuses a negative duration or size, naming the field.
func (c Config) checkNonNegative() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Heartbeat", c.Heartbeat}, {"IdleTimeout", c.IdleTimeout}, {"JanitorInterval", c.JanitorInterval},
		{"StreamTimeout", c.StreamTimeout}, {"WriteTimeout", c.WriteTimeout}, {"ReplayGrace", c.ReplayGrace},
		{"FlushInterval", c.FlushInterval},
	} {
		if d.v < 0 {
			return fmt.Errorf("web: config %s is negative (%s): use a positive duration or 0 for the default", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{
		{"MaxTextBytes", c.MaxTextBytes}, {"ReplayEvents", c.ReplayEvents}, {"ReplayBytes", c.ReplayBytes}, {"ReplayTotalBytes", c.ReplayTotalBytes}, {"SubscriberBuffer", c.SubscriberBuffer},
		{"MaxSessions", c.MaxSessions}, {"HistoryMessages", c.HistoryMessages}, {"HistoryTotalBytes", c.HistoryTotalBytes},
	} {
		if n.v < 0 {
			return fmt.Errorf("web: config %s is negative (%d): use a positive number or 0 for the default", n.name, n.v)
		}
	}
	return nil
}

// fillDefaults sets every zero field but DefaultUser to its default: JanitorInterval after the
// IdleTimeout and ReplayGrace it derives from.
func (c *Config) fillDefaults() {
	if c.Heartbeat == 0 {
		c.Heartbeat = defaultHeartbeat
	}
	if c.MaxTextBytes == 0 {
		c.MaxTextBytes = defaultMaxTextBytes
	}
	if c.ReplayEvents == 0 {
		c.ReplayEvents = defaultReplayEvents
	}
	if c.Authenticated == nil {
		c.Authenticated = LocalRequest
	}
	if c.ReplayBytes == 0 {
		c.ReplayBytes = defaultReplayBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.ReplayGrace == 0 {
		c.ReplayGrace = defaultReplayGrace
	}
	if c.ReplayTotalBytes == 0 {
		c.ReplayTotalBytes = defaultReplayTotal
	}
	if c.JanitorInterval == 0 {
		c.JanitorInterval = min(c.IdleTimeout/4, c.ReplayGrace/3, time.Minute)
		if c.JanitorInterval <= 0 {
			c.JanitorInterval = time.Second
		}
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = defaultMaxSessions
	}
	if c.HistoryMessages == 0 {
		c.HistoryMessages = defaultHistoryMessages
	}
	if c.HistoryTotalBytes == 0 {
		c.HistoryTotalBytes = defaultHistoryTotal
	}
	if c.StreamTimeout == 0 {
		c.StreamTimeout = defaultStreamTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = defaultWriteTimeout
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = defaultFlushInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
