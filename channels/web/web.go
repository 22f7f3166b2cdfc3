// Package web is the browser channel of the gateway: a small embedded chat page and a JSON + SSE
// API (POST /api/chat, /api/chat/stop, /api/chat/approve, GET /api/chat/stream, /api/chat/history).
//
// A web session is a conversation named by a client-chosen (or generated) id. Its
// ConversationRef is {Platform: web, Channel: <session id>, DM: true}, so its session key is
// "web:<session id>". The channel observes every turn of every web session (channels.TurnObserver),
// numbers the events per session and keeps the latest of them (Config.ReplayEvents entries,
// about Config.ReplayBytes bytes; consecutive deltas share an entry) in a replay buffer, which is
// also what the SSE streams read, each from its own cursor. A slow client never blocks the
// pipeline, and a stream costs no buffer of its own: it is dropped only when the replay buffer
// evicted events it had not sent yet, and can re-attach with Last-Event-ID.
//
// The web channel does not authenticate users: the user id in a request is taken as given. Serve
// it on a loopback address or behind an authenticating proxy. Cross-site requests are refused
// (POST bodies must be application/json, and a request whose Origin differs from its Host is
// rejected).
package web

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
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
	// or the call is unknown here. nil: not asked (one process, nothing shared).
	StoredPrompt func(ctx context.Context, conv echogate.ConversationRef, callID string) (echogate.MessageRef, bool)
}

// ConsoleUser is the user id of the console's own identity ("<platform>:console-admin" is an
// approver when listed in approval.approvers).
const ConsoleUser = "console-admin"

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

	// startWait bounds how long a request waits for Run to start (see submit).
	startWait = 5 * time.Second

	maxSessionIDLen = 128
	maxUserIDLen    = 128
	maxPrompts      = 32
)

func (c Config) withDefaults() (Config, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Heartbeat", c.Heartbeat}, {"IdleTimeout", c.IdleTimeout}, {"JanitorInterval", c.JanitorInterval},
		{"StreamTimeout", c.StreamTimeout}, {"WriteTimeout", c.WriteTimeout}, {"ReplayGrace", c.ReplayGrace},
		{"FlushInterval", c.FlushInterval},
	} {
		if d.v < 0 {
			return c, fmt.Errorf("web: config %s is negative (%s): use a positive duration or 0 for the default", d.name, d.v)
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
			return c, fmt.Errorf("web: config %s is negative (%d): use a positive number or 0 for the default", n.name, n.v)
		}
	}
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
	c.DefaultUser = strings.TrimSpace(c.DefaultUser)
	if c.DefaultUser == "" {
		c.DefaultUser = defaultUser
	}
	if msg := checkUser(c.DefaultUser); msg != "" {
		return c, fmt.Errorf("web: config DefaultUser: %s", msg)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Channel is the web channel. It implements channels.Channel, channels.TurnObserver and
// channels.Health; its HTTP API is served by Handler.
type Channel struct {
	cfg Config
	log *slog.Logger

	// mu guards the set of sessions (a session joins and leaves it holding mu and its own mu),
	// sink and state. Each session's state has its own lock (session.mu), so the turns and
	// streams of different sessions never wait for each other; lock order is mu, then a
	// session's mu, and no one takes mu while holding a session's.
	mu       sync.RWMutex
	sessions map[string]*session
	sink     channels.Sink
	state    runState
	started  chan struct{} // closed when Run starts
	stopped  chan struct{} // closed when Run returns: open streams end

	replayBytes  atomic.Int64 // the replay buffers' bytes, all sessions together
	historyBytes atomic.Int64 // the histories' bytes (entryBytes), all sessions together
	// shedding is held by the one goroutine shedding replays or histories past their totals;
	// others that find the total over it go on (TryLock), as the shedder takes it below.
	shedding sync.Mutex
}

type runState uint8

const (
	stateNew runState = iota
	stateRunning
	stateStopped
)

var (
	_ channels.Channel      = (*Channel)(nil)
	_ channels.TurnObserver = (*Channel)(nil)
	_ channels.Health       = (*Channel)(nil)
)

// New returns a web channel. It validates cfg and does no I/O. A nil log discards logs.
func New(cfg Config, log *slog.Logger) (*Channel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Channel{
		cfg:      cfg,
		log:      log.With("channel", echogate.PlatformWeb),
		sessions: make(map[string]*session),
		started:  make(chan struct{}),
		stopped:  make(chan struct{}),
	}, nil
}

// Name returns echogate.PlatformWeb.
func (c *Channel) Name() string { return echogate.PlatformWeb }

// Run accepts chat requests into sink until ctx ends, evicting idle sessions meanwhile. It blocks
// until ctx ends and returns nil; open SSE streams end when it returns. Run may be called once.
func (c *Channel) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return fmt.Errorf("web: Run: sink is nil")
	}
	c.mu.Lock()
	if c.state != stateNew {
		c.mu.Unlock()
		return ErrAlreadyRunning
	}
	c.sink = sink
	c.state = stateRunning
	close(c.started)
	c.mu.Unlock()
	c.log.Info("web channel running")

	t := time.NewTicker(c.cfg.JanitorInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.state = stateStopped
			close(c.stopped)
			c.mu.Unlock()
			c.log.Info("web channel stopped")
			return nil
		case <-t.C:
			if n, r := c.evictIdle(c.cfg.Now()); n > 0 || r > 0 {
				c.log.Debug("evicted idle web sessions", "count", n, "replays_released", r)
			}
		}
	}
}

// Ready reports true once Run started and until it returned.
func (c *Channel) Ready() (bool, string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch c.state {
	case stateRunning:
		return true, "serving"
	case stateStopped:
		return false, "stopped"
	}
	return false, "not started"
}

// waitingForRun, when set (by tests), is called as a request starts waiting for Run.
var waitingForRun func()

// submit hands ev to the sink. A request that arrives while the HTTP server already listens but
// Run has not started yet (the first milliseconds of serve) waits for Run, up to startWait or
// ctx's end; after Run returned, or when it does not start in time, submit fails with
// ErrNotRunning. Otherwise it blocks only as long as the sink does (the sink returns quickly by
// contract).
func (c *Channel) submit(ctx context.Context, ev echogate.InboundEvent) error {
	c.mu.RLock()
	state := c.state
	c.mu.RUnlock()
	if state == stateNew {
		if waitingForRun != nil {
			waitingForRun()
		}
		t := time.NewTimer(startWait)
		select {
		case <-c.started:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	c.mu.RLock()
	sink, state := c.sink, c.state
	c.mu.RUnlock()
	if state != stateRunning {
		return ErrNotRunning
	}
	if err := sink(ctx, ev); err != nil {
		return fmt.Errorf("web: submit event %s of session %s: %w", ev.ID, ev.Conversation.Channel, err)
	}
	return nil
}

// Send records out in its session's history and returns its reference {web, session, "m<N>"}.
// It does no I/O and never blocks; it fails only on a cancelled ctx, an Outbound for another
// platform or an invalid session id. The message appears on the SSE streams only when no turn
// of the session is running (as an event of type "notice"): during a turn the turn's own
// events show the answer.
func (c *Channel) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return echogate.MessageRef{}, fmt.Errorf("web: send: %w", err)
	}
	if p := out.Conversation.Platform; p != "" && p != echogate.PlatformWeb {
		return echogate.MessageRef{}, fmt.Errorf("%w: platform %q", ErrWrongPlatform, p)
	}
	id := out.Conversation.Channel
	if id == "" {
		id = sessionIDFromKey(out.Session)
	}
	if msg := checkSession(id); msg != "" {
		return echogate.MessageRef{}, fmt.Errorf("web: send: %w: %s", ErrBadSession, msg)
	}
	now := c.cfg.Now()

	s, err := c.lockSession(id, now)
	if err != nil {
		return echogate.MessageRef{}, fmt.Errorf("web: send to session %s: %w", id, err)
	}
	defer c.unlockSession(s)
	s.msgSeq++
	ref := echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: id, ID: "m" + strconv.FormatInt(s.msgSeq, 10)}
	kind := outboundKind(out.Kind)
	c.addHistory(s, Entry{ID: ref.ID, Role: kind, Text: out.Text, Turn: out.Turn, At: now})
	var promptCall string
	if out.Kind == echogate.OutApprovalPrompt {
		promptCall = s.attachPromptRef(ref, out, now)
	}
	// The final reply of a turn that just ended (sent after its done) is shown by that done.
	shownByDone := out.Kind == echogate.OutReply && (out.Turn != "" && out.Turn == s.lastTurn || out.Text != "" && out.Text == s.lastFinal)
	if !s.running && !shownByDone {
		// No turn shows this message: emit it on the streams.
		ev := wireEvent{
			TurnEvent: echogate.TurnEvent{
				Type: typeNotice, Session: echogate.SessionKey("web:" + id), Turn: out.Turn,
				Text: out.Text, EventID: out.ReplyTo.ID, Time: now,
			},
			Kind:      kind,
			MessageID: ref.ID,
		}
		if out.Kind == echogate.OutApprovalPrompt {
			ev.CallID = promptCall
			ev.PromptID = ref.ID
		}
		c.publish(s, ev)
		if _, queued := s.queued[ev.EventID]; out.Kind == echogate.OutReply && queued {
			// The pipeline answered the event without running a turn: the request's stream ends.
			c.publish(s, wireEvent{TurnEvent: echogate.TurnEvent{
				Type: echogate.TurnDone, Session: ev.Session, Turn: out.Turn, Text: out.Text,
				Status: "done", EventID: ev.EventID, Time: now,
			}})
			delete(s.queued, ev.EventID)
		}
	}
	return ref, nil
}

// ObserveTurn records ev in its session's replay buffer and wakes the attached streams. It never
// blocks. A done's status is sent as the SSE contract names it: done, paused, stopped or failed.
// Events of sessions that are not web
// sessions (key without the "web:" prefix) are ignored.
func (c *Channel) ObserveTurn(ev echogate.TurnEvent) {
	key := string(ev.Session)
	id, ok := strings.CutPrefix(key, echogate.PlatformWeb+":")
	if !ok || checkSession(id) != "" {
		c.log.Debug("ignoring turn event of a non-web session", "session", key, "event_id", ev.EventID)
		return
	}
	now := c.cfg.Now()
	if ev.Time.IsZero() {
		ev.Time = now
	}
	s, err := c.lockSession(id, now)
	if err != nil {
		c.log.Warn("dropping turn event", "session", key, "event_id", ev.EventID, "turn", ev.Turn, "err", err)
		return
	}
	defer c.unlockSession(s)
	s.observe(ev, now)
	if ev.Type == echogate.TurnDone {
		ev.Status = wireStatus(ev.Status)
	}
	w := wireEvent{TurnEvent: ev}
	if ev.Type == echogate.TurnApprovalRequest {
		if p := s.promptByCall(ev.CallID); p != nil {
			w.PromptID = p.ref.ID
		}
	}
	c.publish(s, w)
}

// wireStatus maps a turn's status to the done event's: done, paused, stopped or failed.
func wireStatus(st string) string {
	switch echogate.TurnStatus(st) {
	case echogate.TurnAborted:
		return "stopped"
	case echogate.TurnFailed:
		return "failed"
	case "":
		return "done"
	}
	return st
}

// History returns a snapshot of a session: its recent messages, whether a turn runs, pending
// approval prompts and the id of its last event. ok is false when the session is not live.
func (c *Channel) History(sessionID string) (snap Snapshot, ok bool) {
	s := c.lockLiveSession(sessionID)
	if s == nil {
		return Snapshot{Session: sessionID, Messages: []Entry{}, Pending: []Pending{}}, false
	}
	defer s.mu.Unlock()
	return s.snapshot(), true
}

// newID returns a random id usable as a session or event id (26 characters of [A-Z2-7]).
func newID() string { return rand.Text() }

func sessionIDFromKey(k echogate.SessionKey) string {
	id, _ := strings.CutPrefix(string(k), echogate.PlatformWeb+":")
	return id
}

func outboundKind(k echogate.OutboundKind) string {
	switch k {
	case echogate.OutReply:
		return "assistant"
	case echogate.OutApprovalPrompt:
		return "approval_prompt"
	case echogate.OutPlan:
		return "plan"
	}
	return "notice"
}

// checkSession returns what is wrong with a session id, or "".
func checkSession(id string) string {
	if id == "" {
		return "session id is empty"
	}
	if len(id) > maxSessionIDLen {
		return fmt.Sprintf("session id is %d bytes long, over the limit of %d: use a shorter id", len(id), maxSessionIDLen)
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.' {
			continue
		}
		return fmt.Sprintf("session id %q holds %q at byte %d: use only letters, digits, '-', '_' and '.'", id, rune(b), i)
	}
	return ""
}

// checkUser returns what is wrong with a user id, or "".
func checkUser(u string) string {
	if len(u) > maxUserIDLen {
		return fmt.Sprintf("user id is %d bytes long, over the limit of %d: use a shorter id", len(u), maxUserIDLen)
	}
	for i, r := range u {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return fmt.Sprintf("user id %q holds the control or invalid character %q at byte %d: use printable characters", u, r, i)
		}
	}
	return ""
}
