package web

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

//go:embed static
var staticFS embed.FS

const (
	chatFields    = `"session", "user", "text" and "id"`
	stopFields    = `"session" and "user"`
	approveFields = `"session", "user", "call_id", "prompt_id" and "decision"`
)

// Handler returns the channel's HTTP API and chat page:
//
//	GET  /                    the chat page (assets under /assets/)
//	POST /api/chat            {"session","user","text","id"} → text/event-stream of the turn
//	POST /api/chat/stop       {"session","user"} → 202, stops the session's running turn
//	POST /api/chat/approve    {"session","user","call_id"|"prompt_id","decision"} → 202
//	GET  /api/chat/stream     ?session=…, Last-Event-ID → replay and follow the current turn
//	GET  /api/chat/history    ?session=… → the session's recent messages and pending approvals
//
// Mount it at "/" (or at least at "/", "/assets/" and "/api/chat"); other paths answer 404.
func (c *Channel) Handler() http.Handler {
	mux := http.NewServeMux()
	page, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic("web: embedded page missing: " + err.Error()) // a build defect, not a runtime condition
	}
	assets, err := fs.Sub(page, "assets")
	if err != nil {
		panic("web: embedded assets missing: " + err.Error())
	}
	files := http.StripPrefix("/assets", http.FileServerFS(assets))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, methodNotAllowed(r, "GET"))
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, page, "index.html")
	})
	mux.HandleFunc("/assets/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, methodNotAllowed(r, "GET"))
			return
		}
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			writeError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no such file %s", r.URL.Path)})
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	for _, rt := range c.chatRoutes() {
		mux.HandleFunc(rt.path, rt.h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no such endpoint %s: see GET / for the chat page", r.URL.Path)})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		mux.ServeHTTP(w, r)
	})
}

// chatRoute is one path of the chat API.
type chatRoute struct {
	path string
	h    http.HandlerFunc
}

func (c *Channel) chatRoutes() []chatRoute {
	return []chatRoute{
		{"/api/chat", c.handleChat},
		{"/api/chat/stop", c.handleStop},
		{"/api/chat/approve", c.handleApprove},
		{"/api/chat/stream", c.handleStream},
		{"/api/chat/history", c.handleHistory},
	}
}

// Routes lists the patterns Handler serves (http.ServeMux patterns), so that a server mounting
// it can check its own rules against every one.
func (c *Channel) Routes() []string {
	out := []string{"/{$}", "/assets/"}
	for _, rt := range c.chatRoutes() {
		out = append(out, rt.path)
	}
	return out
}

func (c *Channel) bodyLimit() int64 { return int64(2*c.cfg.MaxTextBytes + 16<<10) }

func (c *Channel) conversation(session string) echogate.ConversationRef {
	return echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: session, DM: true}
}

// user validates a requested user id, defaulting to Config.DefaultUser. The console's identity
// (ConsoleUser, an approver when listed) is only for authenticated requests (Config.Authenticated).
func (c *Channel) user(r *http.Request, u string) (string, *apiError) {
	u = strings.TrimSpace(u)
	if u == "" {
		return c.cfg.DefaultUser, nil
	}
	if msg := checkUser(u); msg != "" {
		return "", badRequest("%s", msg)
	}
	if IsConsoleName(u) && !c.cfg.Authenticated(r) {
		return "", &apiError{status: http.StatusForbidden, msg: fmt.Sprintf(
			"user %q is the console's own identity and needs an authenticated request: open the chat on this machine at http://localhost or http://127.0.0.1, or set http.auth_token", u)}
	}
	return u, nil
}

// IsConsoleName reports the user ids kept for the console: ConsoleUser, "console" and
// "console:<operator>", the ids the console's own decisions are recorded under. A chat request
// may use them only when authenticated, so no one else's messages or decisions read as the
// console's.
func IsConsoleName(u string) bool {
	l := strings.ToLower(strings.TrimSpace(u))
	return l == ConsoleUser || l == "console" || strings.HasPrefix(l, "console:")
}

// sessionParam validates a required session id.
func sessionParam(id string) *apiError {
	if id == "" {
		return badRequest("session is missing: name the session (letters, digits, '-', '_' and '.')")
	}
	if msg := checkSession(id); msg != "" {
		return badRequest("%s", msg)
	}
	return nil
}

// sinkError maps a sink failure to the HTTP answer: back-pressure (an error carrying
// *echogate.RetryAfterError, a temporary error, or one Config.IsBackpressure recognises) is 429
// with Retry-After; anything else (the gateway shutting down) is 503.
func (c *Channel) sinkError(err error) *apiError {
	if d, ok := echogate.RetryAfter(err); ok {
		d = max(d, time.Second)
		return &apiError{status: http.StatusTooManyRequests, retryAfter: d,
			msg: fmt.Sprintf("the gateway is busy with this session: retry in %s (%v)", d.Round(time.Second), err)}
	}
	var t interface{ Temporary() bool }
	if errors.As(err, &t) && t.Temporary() || c.cfg.IsBackpressure != nil && c.cfg.IsBackpressure(err) {
		return &apiError{status: http.StatusTooManyRequests, retryAfter: time.Second,
			msg: fmt.Sprintf("the gateway is busy with this session: retry in a second (%v)", err)}
	}
	if errors.Is(err, ErrTooManySessions) {
		return &apiError{status: http.StatusServiceUnavailable, retryAfter: 5 * time.Second,
			msg: fmt.Sprintf("%v: retry later", err)}
	}
	return &apiError{status: http.StatusServiceUnavailable, retryAfter: 5 * time.Second,
		msg: fmt.Sprintf("the gateway is not accepting messages (%v): retry later", err)}
}

type chatRequest struct {
	Session string `json:"session"`
	User    string `json:"user"`
	Text    string `json:"text"`
	// ID is an optional client message id: a retried POST with the same id re-attaches to the
	// same turn instead of starting another one.
	ID string `json:"id"`
}

// chatEvent checks a chat request (it fills in a missing session id) and makes its inbound
// event; a bad request is answered by the error naming what to fix.
func (c *Channel) chatEvent(r *http.Request, req *chatRequest) (ev echogate.InboundEvent, _ *apiError) {
	if req.Session == "" {
		req.Session = newID()
	} else if msg := checkSession(req.Session); msg != "" {
		return ev, badRequest("%s", msg)
	}
	user, e := c.user(r, req.User)
	if e != nil {
		return ev, e
	}
	if strings.TrimSpace(req.Text) == "" {
		return ev, badRequest(`text is empty: type a message in "text"`)
	}
	if len(req.Text) > c.cfg.MaxTextBytes {
		return ev, badRequest("text is %d bytes, over the limit of %d bytes: shorten the message or split it", len(req.Text), c.cfg.MaxTextBytes)
	}
	eventID := newID()
	if req.ID != "" {
		if msg := checkSession(req.ID); msg != "" {
			return ev, badRequest("message %s", strings.TrimPrefix(msg, "session "))
		}
		eventID = clientEventPrefix + req.Session + "." + req.ID
	}
	ev = echogate.InboundEvent{
		ID:           eventID,
		Kind:         echogate.KindDirect,
		Conversation: c.conversation(req.Session),
		Actor:        echogate.Actor{ID: user},
		Text:         req.Text,
		Message:      echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: req.Session, ID: eventID},
		ReceivedAt:   c.cfg.Now(),
	}
	return ev, nil
}

func (c *Channel) handleChat(w http.ResponseWriter, r *http.Request) {
	a, ok := c.acceptChat(w, r)
	if !ok {
		return
	}
	sw := c.startSSE(w, a.session)
	if err := sw.events(a.replay); err != nil {
		c.unsubscribeFrom(a.s, a.sub)
		return
	}
	if a.sub == nil {
		return
	}
	c.follow(r.Context(), sw, a.s, a.sub, wireEvent.terminal)
}

// acceptedChat is what handleChat streams once acceptChat took the request: the events to
// replay, and the subscription to follow (nil when the turn had already finished).
type acceptedChat struct {
	session string
	s       *session
	sub     *subscriber
	replay  []wireEvent
}

// acceptChat checks a chat request and submits its message (or finds the turn of a retried
// one); ok is false when it answered the request itself (an error, or a stop command's notice).
//
// It is handleChat's first half in a function of its own so that its frame (the request, the
// inbound event) and the deep calls it makes (JSON decoding, the sink) are off the stack while
// the stream waits for its turn's events: the goroutine's stack, grown by them, is then small
// enough for the garbage collector to shrink while it waits.
func (c *Channel) acceptChat(w http.ResponseWriter, r *http.Request) (a acceptedChat, ok bool) {
	var req chatRequest
	if !readPost(w, r, c.bodyLimit(), &req, chatFields) {
		return a, false
	}
	ev, e := c.chatEvent(r, &req)
	if e != nil {
		writeError(w, e)
		return a, false
	}
	eventID, user, now := ev.ID, ev.Actor.ID, ev.ReceivedAt
	// The request's ids are added to a log line only when one is written: most requests log
	// nothing at info, and a logger With them cost an allocation and a copy of the handler each.
	ids := func(args ...any) []any { return append(args, "session", req.Session, "event_id", eventID) }

	if strings.EqualFold(strings.TrimSpace(req.Text), "stop") {
		// A stop command starts no turn: answer with one notice instead of waiting for a done.
		if err := c.submit(r.Context(), ev); err != nil {
			c.log.Warn("stop not accepted", ids("err", err)...)
			writeError(w, c.sinkError(err))
			return a, false
		}
		sw := c.startSSE(w, req.Session)
		_ = sw.event(wireEvent{TurnEvent: echogate.TurnEvent{Type: typeNotice, Session: echogate.SessionKey("web:" + req.Session),
			Text: "stop requested", EventID: eventID, Time: now}, Kind: "notice"})
		return a, false
	}

	s, err := c.lockSession(req.Session, now)
	if err != nil {
		writeError(w, c.sinkError(err))
		return a, false
	}
	replay := s.replayEvent(eventID, now)
	_, queued := s.queued[eventID]
	accepted := queued || len(replay) > 0 || (s.running && s.runningEvent == eventID)
	finished := len(replay) > 0 && replay[len(replay)-1].terminal() && !(s.running && s.runningEvent == eventID)
	var sub *subscriber
	if !finished {
		sub = s.subscribe(eventID)
	}
	if !accepted {
		s.queue(eventID, now)
		c.addHistory(s, Entry{ID: eventID, Role: "user", User: user, Text: req.Text, At: now})
	}
	c.unlockSession(s)

	if !accepted {
		if err := c.submit(r.Context(), ev); err != nil {
			s.mu.Lock()
			delete(s.queued, eventID)
			if n := s.removeHistory(eventID); !s.dropped { // a dropped session's bytes left the total with it
				c.historyBytes.Add(-int64(n))
			}
			s.unsubscribe(sub)
			s.mu.Unlock()
			c.log.Warn("chat message not accepted", ids("err", err)...)
			writeError(w, c.sinkError(err))
			return a, false
		}
		if c.log.Enabled(r.Context(), slog.LevelDebug) {
			c.log.Debug("chat message accepted", ids()...)
		}
	}
	return acceptedChat{session: req.Session, s: s, sub: sub, replay: replay}, true
}

type stopRequest struct {
	Session string `json:"session"`
	User    string `json:"user"`
}

func (c *Channel) handleStop(w http.ResponseWriter, r *http.Request) {
	var req stopRequest
	if !readPost(w, r, 16<<10, &req, stopFields) {
		return
	}
	if e := sessionParam(req.Session); e != nil {
		writeError(w, e)
		return
	}
	user, e := c.user(r, req.User)
	if e != nil {
		writeError(w, e)
		return
	}
	id := newID()
	ev := echogate.InboundEvent{
		ID:           id,
		Kind:         echogate.KindDirect,
		Conversation: c.conversation(req.Session),
		Actor:        echogate.Actor{ID: user},
		Text:         "stop",
		Message:      echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: req.Session, ID: id},
		ReceivedAt:   c.cfg.Now(),
	}
	if err := c.submit(r.Context(), ev); err != nil {
		c.log.Warn("stop not accepted", "session", req.Session, "event_id", id, "err", err)
		writeError(w, c.sinkError(err))
		return
	}
	c.log.Debug("stop requested", "session", req.Session, "event_id", id)
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "event_id": id})
}

type approveRequest struct {
	Session  string `json:"session"`
	User     string `json:"user"`
	CallID   string `json:"call_id"`
	PromptID string `json:"prompt_id"`
	Decision string `json:"decision"`
}

func (c *Channel) handleApprove(w http.ResponseWriter, r *http.Request) {
	var req approveRequest
	if !readPost(w, r, 16<<10, &req, approveFields) {
		return
	}
	if e := sessionParam(req.Session); e != nil {
		writeError(w, e)
		return
	}
	user, e := c.user(r, req.User)
	if e != nil {
		writeError(w, e)
		return
	}
	emoji, ok := echogate.DecisionReaction(req.Decision)
	if !ok {
		writeError(w, badRequest("decision %q is not one of %s", req.Decision, echogate.DecisionWords))
		return
	}
	if req.CallID == "" && req.PromptID == "" {
		writeError(w, badRequest("name the approval: give call_id (from the approval_request event) or prompt_id"))
		return
	}
	now := c.cfg.Now()
	id := newID()

	s := c.lockLiveSession(req.Session)
	if s == nil {
		if c.approveStored(w, r, req, user, emoji) {
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("unknown session %q: it has no pending approval (sessions are forgotten after %s idle)", req.Session, c.cfg.IdleTimeout)})
		return
	}
	var p *prompt
	what := "call " + strconv.Quote(req.CallID)
	if req.CallID != "" {
		p = s.promptByCall(req.CallID)
		if p != nil && req.PromptID != "" && p.ref.ID != req.PromptID {
			s.mu.Unlock()
			writeError(w, badRequest("call_id %q and prompt_id %q name different approvals: give one of them", req.CallID, req.PromptID))
			return
		}
	} else {
		p = s.promptByRef(req.PromptID)
		what = "prompt " + strconv.Quote(req.PromptID)
	}
	if p == nil {
		s.mu.Unlock()
		if c.approveStored(w, r, req, user, emoji) {
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf(
			"no pending approval for %s in session %q: it was decided already or never asked", what, req.Session)})
		return
	}
	if p.ref.IsZero() {
		s.mu.Unlock()
		writeError(w, &apiError{status: http.StatusConflict, retryAfter: time.Second, msg: fmt.Sprintf(
			"the approval prompt for %s is not posted yet: retry in a moment", what)})
		return
	}
	ref := p.ref
	if len(p.decided) >= 8 {
		p.decided = p.decided[1:]
	}
	p.decided = append(p.decided, id)
	s.queue(id, now)
	s.lastActive = now
	s.mu.Unlock()

	ev := echogate.InboundEvent{
		ID:           id,
		Kind:         echogate.KindReaction,
		Conversation: c.conversation(req.Session),
		Actor:        echogate.Actor{ID: user},
		Reaction:     emoji,
		Target:       ref,
		Message:      ref,
		ReceivedAt:   now,
	}
	log := c.log.With("session", req.Session, "event_id", id)
	if err := c.submit(r.Context(), ev); err != nil {
		s.mu.Lock()
		delete(s.queued, id)
		s.mu.Unlock()
		log.Warn("approval decision not accepted", "err", err)
		writeError(w, c.sinkError(err))
		return
	}
	log.Info("approval decision submitted", "decision", req.Decision, "prompt", ref.ID)
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "event_id": id, "prompt_id": ref.ID})
}

func (c *Channel) handleStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r, "GET"))
		return
	}
	q := r.URL.Query()
	id := q.Get("session")
	if e := sessionParam(id); e != nil {
		writeError(w, e)
		return
	}
	lastRaw := r.Header.Get("Last-Event-ID")
	if lastRaw == "" {
		lastRaw = q.Get("last_event_id")
	}
	var last int64 = -1
	if lastRaw != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(lastRaw), 10, 64)
		if err != nil || n < 0 {
			writeError(w, badRequest("Last-Event-ID %q is not an event id: send the id: of the last event you received, or omit it", lastRaw))
			return
		}
		last = n
	}

	s := c.lockLiveSession(id)
	if s == nil {
		// Nothing to replay or follow; 204 also tells an EventSource to stop reconnecting.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var (
		replay []wireEvent
		gap    bool
	)
	switch {
	case last < 0 || last > s.lastSeq: // no id, or one from before a restart or eviction
		replay = s.replayLatestTurn()
	default:
		replay, gap = s.replayAfter(last)
	}
	var (
		sub   *subscriber
		isEnd func(wireEvent) bool
	)
	switch {
	case s.running:
		target := s.runningEvent
		isEnd = func(e wireEvent) bool { return e.terminal() && (target == "" || e.EventID == target) }
	case len(s.queued) > 0:
		isEnd = wireEvent.terminal
	}
	if isEnd != nil {
		sub = s.subscribe("")
	}
	s.lastActive = c.cfg.Now()
	s.mu.Unlock()

	if len(replay) == 0 && sub == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sw := c.startSSE(w, id)
	if gap {
		if err := sw.event(wireEvent{TurnEvent: echogate.TurnEvent{Type: typeNotice, Session: echogate.SessionKey("web:" + id),
			Text: "some events were dropped from the replay buffer; reload the history", Time: c.cfg.Now()}, Kind: "gap"}); err != nil {
			c.unsubscribeFrom(s, sub)
			return
		}
	}
	if err := sw.events(replay); err != nil {
		c.unsubscribeFrom(s, sub)
		return
	}
	if sub == nil {
		return
	}
	c.follow(r.Context(), sw, s, sub, isEnd)
}

func (c *Channel) handleHistory(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r, "GET"))
		return
	}
	id := r.URL.Query().Get("session")
	if e := sessionParam(id); e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, c.storedHistory(r.Context(), id))
}

func (c *Channel) unsubscribeFrom(s *session, sub *subscriber) {
	if sub == nil {
		return
	}
	s.mu.Lock()
	s.unsubscribe(sub)
	s.mu.Unlock()
}

// readPost is ReadMutation for the chat API's POSTs.
func readPost(w http.ResponseWriter, r *http.Request, limit int64, dst any, fields string) bool {
	return ReadMutation(w, r, http.MethodPost, limit, dst, fields)
}

// Expect tells the channel that an event for session was submitted elsewhere (the console's
// decision on a web session's approval), so that a stream attached to the session follows the
// turn it starts, as after POST /api/chat/approve. cancel forgets it when the submit failed.
// A session the channel no longer holds is left alone.
func (c *Channel) Expect(session, eventID string) (cancel func()) {
	s := c.lockLiveSession(session)
	if s == nil {
		return func() {}
	}
	now := c.cfg.Now()
	s.queue(eventID, now)
	s.lastActive = now
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.queued, eventID)
		s.mu.Unlock()
	}
}
