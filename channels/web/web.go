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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

// ConsoleUser is the user id of the console's own identity ("<platform>:console-admin" is an
// approver when listed in approval.approvers).
const ConsoleUser = "console-admin"

const (
	// startWait bounds how long a request waits for Run to start (see submit).
	startWait = 5 * time.Second

	maxSessionIDLen = 128
	maxUserIDLen    = 128
	maxPrompts      = 32
)

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
