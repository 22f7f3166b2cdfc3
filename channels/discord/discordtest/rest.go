package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// --- REST ---

type apiError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	version := r.PathValue("version")
	path := strings.TrimPrefix(r.URL.Path, "/api/"+version)
	if !s.waitHold(r, path) {
		return
	}
	status := s.handleREST(w, r, path, body)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Path: path, Body: body, Status: status, At: time.Now()})
	s.notify()
	s.mu.Unlock()
}

// handleREST answers one request and returns the status it wrote.
func (s *Server) handleREST(w http.ResponseWriter, r *http.Request, path string, body []byte) int {
	if version := r.PathValue("version"); version != "v9" && version != "v10" {
		writeJSON(w, http.StatusNotFound, apiError{Message: "unsupported API version " + version})
		return http.StatusNotFound
	}
	if r.Header.Get("Authorization") != "Bot "+s.opts.Token {
		writeJSON(w, http.StatusUnauthorized, apiError{Message: "401: Unauthorized", Code: 0})
		return http.StatusUnauthorized
	}
	if st, ok := s.injected429(w, r.Method, path); ok {
		return st
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if st, ok := s.handleInteractionREST(w, r.Method, parts, body); ok {
		return st
	}
	switch {
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodGet:
		return s.listMessages(w, parts[1], r.URL.Query())
	case r.Method == http.MethodGet && path == "/gateway":
		writeJSON(w, 200, map[string]any{"url": s.GatewayURL})
	case r.Method == http.MethodGet && path == "/gateway/bot":
		writeJSON(w, 200, map[string]any{"url": s.GatewayURL, "shards": 1,
			"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}})
	case r.Method == http.MethodGet && path == "/users/@me":
		writeJSON(w, 200, s.Bot())
	case r.Method == http.MethodPost && path == "/users/@me/channels":
		return s.openDM(w, body)
	case r.Method == http.MethodGet && path == "/applications/@me":
		flags := int64(1 << 18)
		if s.opts.AppFlags != nil {
			flags = *s.opts.AppFlags
		}
		writeJSON(w, 200, map[string]any{"id": s.Bot().ID, "name": s.Bot().Username, "flags": flags})
	case len(parts) == 2 && parts[0] == "channels" && r.Method == http.MethodGet:
		s.mu.Lock()
		guild, known := s.guildOf[parts[1]]
		s.mu.Unlock()
		typ := 0
		if known && guild == "" {
			typ = 1
		}
		s.mu.Lock()
		if s.threads[parts[1]] {
			typ = 11
		}
		s.mu.Unlock()
		ch := map[string]any{"id": parts[1], "type": typ}
		if guild != "" {
			ch["guild_id"] = guild
		}
		writeJSON(w, 200, ch)
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "typing" && r.Method == http.MethodPost:
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodPost:
		return s.createMessage(r.Context(), w, parts[1], body)
	case len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		return s.messageOp(r.Context(), w, r.Method, parts[1], parts[3], body)
	case len(parts) == 7 && parts[0] == "channels" && parts[2] == "messages" && parts[4] == "reactions" && parts[6] == "@me":
		return s.reactionOp(w, r.Method, parts[1], parts[3], parts[5])
	default:
		writeJSON(w, http.StatusNotFound, apiError{Message: "404: Not Found (discordtest has no route " + r.Method + " " + path + ")", Code: 0})
		return http.StatusNotFound
	}
	return 200
}

func write429(w http.ResponseWriter, after time.Duration, global bool) int {
	secs := after.Seconds()
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	h.Set("X-RateLimit-Scope", "user")
	if global {
		h.Set("X-RateLimit-Global", "true")
		h.Set("X-RateLimit-Scope", "global")
	}
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": global})
	return http.StatusTooManyRequests
}

// injected429 answers a queued RateLimitNext rule or a channel limit violation.
func (s *Server) injected429(w http.ResponseWriter, method, path string) (int, bool) {
	s.mu.Lock()
	for i, l := range s.limits {
		if l.method == method && strings.Contains(path, l.contains) {
			s.limits = append(s.limits[:i], s.limits[i+1:]...)
			s.mu.Unlock()
			return write429(w, l.after, l.global), true
		}
	}
	if s.opts.EnforceChannelLimit && strings.HasPrefix(path, "/channels/") && strings.Contains(path, "/messages") &&
		!strings.Contains(path, "/reactions") && (method == http.MethodPost || method == http.MethodPatch) {
		ch := strings.Split(strings.Trim(path, "/"), "/")[1]
		key := method + " " + ch
		limit, window := s.opts.ChannelLimit, s.opts.ChannelWindow
		now := time.Now()
		var win []time.Time
		for _, t := range s.windows[key] {
			if now.Sub(t) < window {
				win = append(win, t)
			}
		}
		if len(win) >= limit {
			s.windows[key] = win
			s.violations++
			after := window - now.Sub(win[0])
			s.mu.Unlock()
			return write429(w, after, false), true
		}
		win = append(win, now)
		s.windows[key] = win
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(limit-len(win)))
		h.Set("X-RateLimit-Reset-After", strconv.FormatFloat((window-now.Sub(win[0])).Seconds(), 'f', 3, 64))
		h.Set("X-RateLimit-Bucket", key)
	}
	s.mu.Unlock()
	return 0, false
}

type wireUser struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name,omitempty"`
	Bot        bool   `json:"bot,omitempty"`
}

type wireMessage struct {
	ID                string          `json:"id"`
	ChannelID         string          `json:"channel_id"`
	GuildID           string          `json:"guild_id,omitempty"`
	Author            wireUser        `json:"author"`
	Content           string          `json:"content"`
	Timestamp         string          `json:"timestamp"`
	EditedTimestamp   *string         `json:"edited_timestamp"`
	Type              int             `json:"type"`
	Mentions          []wireUser      `json:"mentions"`
	Attachments       []any           `json:"attachments"`
	Embeds            []any           `json:"embeds"`
	Nonce             string          `json:"nonce,omitempty"`
	MessageReference  *wireReference  `json:"message_reference,omitempty"`
	ReferencedMessage *wireMessage    `json:"referenced_message,omitempty"`
	Member            *map[string]any `json:"member,omitempty"`
}

type wireReference struct {
	MessageID string `json:"message_id"`
	ChannelID string `json:"channel_id,omitempty"`
	GuildID   string `json:"guild_id,omitempty"`
}

func (s *Server) wireLocked(m *Message, withRef bool) wireMessage {
	w := wireMessage{
		ID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID,
		Author:  wireUser{ID: m.Author.ID, Username: m.Author.Username, GlobalName: m.Author.GlobalName, Bot: m.Author.Bot},
		Content: m.Content, Timestamp: m.CreatedAt.UTC().Format(time.RFC3339Nano),
		Mentions: []wireUser{}, Attachments: []any{}, Embeds: []any{}, Nonce: m.Nonce,
	}
	if n := len(m.EditedAt); n > 0 {
		ts := m.EditedAt[n-1].UTC().Format(time.RFC3339Nano)
		w.EditedTimestamp = &ts
	}
	if m.ReferenceID != "" {
		w.Type = 19
		w.MessageReference = &wireReference{MessageID: m.ReferenceID, ChannelID: m.ChannelID, GuildID: m.GuildID}
		if ref, ok := s.messages[m.ReferenceID]; ok && withRef {
			r := s.wireLocked(ref, false)
			w.ReferencedMessage = &r
		}
	}
	for _, a := range m.Attachments {
		w.Attachments = append(w.Attachments, s.wireAttachment(m.ChannelID, a))
	}
	if m.GuildID != "" {
		w.Member = &map[string]any{"roles": []string{}, "joined_at": m.CreatedAt.UTC().Format(time.RFC3339)}
	}
	return w
}

func (s *Server) createMessage(ctx context.Context, w http.ResponseWriter, channelID string, body []byte) int {
	var req struct {
		Content          string `json:"content"`
		Nonce            any    `json:"nonce"`
		EnforceNonce     bool   `json:"enforce_nonce"`
		MessageReference *struct {
			MessageID string `json:"message_id"`
		} `json:"message_reference"`
		Components json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "400: Bad Request: " + err.Error(), Code: 50109})
		return http.StatusBadRequest
	}
	if req.Content == "" {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "Cannot send an empty message", Code: 50006})
		return http.StatusBadRequest
	}
	if n := len([]rune(req.Content)); n > 2000 {
		writeJSON(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf("Invalid Form Body: content: Must be 2000 or fewer in length (got %d)", n), Code: 50035})
		return http.StatusBadRequest
	}
	nonce := ""
	if req.Nonce != nil {
		nonce = fmt.Sprint(req.Nonce)
	}
	s.mu.Lock()
	if req.EnforceNonce && nonce != "" {
		if use, ok := s.nonces[channelID+"\x00"+nonce]; ok && time.Since(use.at) < s.nonceWindow() {
			out := s.wireLocked(s.messages[use.id], true)
			s.mu.Unlock()
			writeJSON(w, 200, out)
			return 200
		}
	}
	m := &Message{ID: s.newID(), ChannelID: channelID, GuildID: s.guildOf[channelID], Author: s.Bot(), Content: req.Content, Nonce: nonce, CreatedAt: time.Now()}
	if req.MessageReference != nil {
		m.ReferenceID = req.MessageReference.MessageID
	}
	if len(req.Components) > 0 && string(req.Components) != "null" {
		m.Components = string(req.Components)
	}
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	if nonce != "" {
		s.nonces[channelID+"\x00"+nonce] = nonceUse{id: m.ID, at: m.CreatedAt}
	}
	out := s.wireLocked(m, true)
	stall := s.stallLocked(req.Content)
	s.mu.Unlock()
	if !s.opts.NoEcho {
		s.Dispatch("MESSAGE_CREATE", out)
	}
	if !waitStall(ctx, stall) { // the message exists; its response waits
		return 0
	}
	writeJSON(w, 200, out)
	return 200
}

func (s *Server) messageOp(ctx context.Context, w http.ResponseWriter, method, channelID, messageID string, body []byte) int {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok || m.ChannelID != channelID || m.Deleted {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, apiError{Message: "Unknown Message", Code: 10008})
		return http.StatusNotFound
	}
	switch method {
	case http.MethodGet:
		out := s.wireLocked(m, true)
		out.Nonce = "" // Discord shows a nonce only to the create and in MESSAGE_CREATE
		s.mu.Unlock()
		writeJSON(w, 200, out)
		return 200
	case http.MethodPatch:
		var req struct {
			Content    *string          `json:"content"`
			Components *json.RawMessage `json:"components"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			s.mu.Unlock()
			writeJSON(w, http.StatusBadRequest, apiError{Message: "400: Bad Request", Code: 50109})
			return http.StatusBadRequest
		}
		if m.Author.ID != s.opts.BotID {
			s.mu.Unlock()
			writeJSON(w, http.StatusForbidden, apiError{Message: "Cannot edit a message authored by another user", Code: 50005})
			return http.StatusForbidden
		}
		if req.Content != nil {
			if n := len([]rune(*req.Content)); n > 2000 || n == 0 {
				s.mu.Unlock()
				writeJSON(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf("Invalid Form Body: content length %d", n), Code: 50035})
				return http.StatusBadRequest
			}
			m.Content = *req.Content
		}
		if req.Components != nil {
			m.Components = ""
			if c := string(*req.Components); c != "[]" && c != "null" {
				m.Components = c
			}
		}
		m.EditedAt = append(m.EditedAt, time.Now())
		out := s.wireLocked(m, true)
		stall := s.stallLocked(m.Content)
		s.mu.Unlock()
		if !waitStall(ctx, stall) { // the edit is applied; its response waits
			return 0
		}
		writeJSON(w, 200, out)
		return 200
	case http.MethodDelete:
		m.Deleted = true
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusMethodNotAllowed, apiError{Message: "405: Method Not Allowed"})
	return http.StatusMethodNotAllowed
}

func (s *Server) reactionOp(w http.ResponseWriter, method, channelID, messageID, emoji string) int {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok || m.ChannelID != channelID || m.Deleted {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, apiError{Message: "Unknown Message", Code: 10008})
		return http.StatusNotFound
	}
	switch method {
	case http.MethodPut:
		m.Reactions = append(m.Reactions, emoji)
		guild := m.GuildID
		author := m.Author.ID
		s.mu.Unlock()
		if !s.opts.NoEcho {
			s.dispatchReaction(channelID, guild, messageID, author, s.Bot(), emoji)
		}
	case http.MethodDelete:
		for i, e := range m.Reactions {
			if e == emoji {
				m.Reactions = append(m.Reactions[:i], m.Reactions[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
	default:
		s.mu.Unlock()
		writeJSON(w, http.StatusMethodNotAllowed, apiError{Message: "405: Method Not Allowed"})
		return http.StatusMethodNotAllowed
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}
