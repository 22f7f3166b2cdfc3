package web

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/echogate/echogate"
)

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
