package web

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
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
