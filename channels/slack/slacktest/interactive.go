package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"
)

// User is a workspace member the fake answers users.info for.
type User struct {
	ID, Name, DisplayName, RealName string
}

// Response is one message posted to a response_url (an interaction's private answer).
type Response struct {
	Path         string
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// Ephemeral is a message posted with chat.postEphemeral: visible only to User.
type Ephemeral struct {
	Channel, User, ThreadTS, Text string
}

// Ephemerals returns the ephemeral messages posted, in order.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ephemeral(nil), s.ephemerals...)
}

// AddUser makes users.info know u.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = map[string]User{}
	}
	s.users[u.ID] = u
}

func (s *Server) userInfoLocked(p map[string]string) (int, map[string]any) {
	u, ok := s.users[p["user"]]
	if !ok {
		return fail("user_not_found")
	}
	return 200, map[string]any{"ok": true, "user": map[string]any{"id": u.ID, "name": u.Name, "real_name": u.RealName,
		"profile": map[string]any{"display_name": u.DisplayName, "real_name": u.RealName}}}
}

// ResponseURL returns a response_url of this server for an interaction; what is posted to it
// is recorded (Responses).
func (s *Server) ResponseURL(id string) string { return s.srv.URL + "/response/" + id }

// Responses returns what was posted to the server's response_urls, in order.
func (s *Server) Responses() []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Response(nil), s.responses...)
}

func (s *Server) serveResponse(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		http.Error(w, "response_url takes a JSON POST", http.StatusBadRequest)
		return
	}
	var resp Response
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &resp); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	resp.Path = r.URL.Path
	s.mu.Lock()
	s.responses = append(s.responses, resp)
	s.notifyLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// PushInteractive delivers an interactive envelope (block_actions and the like) over Socket
// Mode and returns its envelope id.
func (s *Server) PushInteractive(payload map[string]any) (string, error) {
	return s.pushEnvelope("interactive", payload)
}

// PushSlashCommand delivers a slash_commands envelope over Socket Mode and returns its
// envelope id.
func (s *Server) PushSlashCommand(cmd map[string]any) (string, error) {
	return s.pushEnvelope("slash_commands", cmd)
}

func (s *Server) pushEnvelope(typ string, payload map[string]any) (string, error) {
	s.mu.Lock()
	s.envSeq++
	id := fmt.Sprintf("env-%d", s.envSeq)
	var conn *wsConn
	for c := range s.conns {
		conn = c
		break
	}
	s.mu.Unlock()
	if conn == nil {
		return "", fmt.Errorf("slacktest: push %s: no socket mode connection open", typ)
	}
	env := map[string]any{"envelope_id": id, "type": typ, "accepts_response_payload": true, "payload": payload}
	if err := conn.writeJSON(env); err != nil {
		s.dropConn(conn)
		return "", fmt.Errorf("slacktest: push %s: %w", typ, err)
	}
	return id, nil
}

// ButtonPress is the block_actions payload of user clicking the button actionID on message
// (channel, ts).
func ButtonPress(user, userName, channel, ts, actionID string) map[string]any {
	return map[string]any{
		"type": "block_actions", "trigger_id": "trig-" + ts + "-" + user, "api_app_id": DefaultAppID,
		"team": map[string]any{"id": DefaultTeamID}, "user": map[string]any{"id": user, "name": userName},
		"container": map[string]any{"type": "message", "message_ts": ts, "channel_id": channel},
		"channel":   map[string]any{"id": channel}, "message": map[string]any{"type": "message", "ts": ts},
		"actions": []any{map[string]any{"type": "button", "action_id": actionID, "block_id": "echogate_approval",
			"value": actionID, "action_ts": ts + "1"}},
	}
}

// SlashCommand is the payload of user running command with text in channel; its answer goes to
// responseURL.
func SlashCommand(command, text, user, channel, responseURL, triggerID string) map[string]any {
	return map[string]any{"token": "verification-token", "team_id": DefaultTeamID, "channel_id": channel, "user_id": user,
		"user_name": user, "command": command, "text": text, "response_url": responseURL, "trigger_id": triggerID, "api_app_id": DefaultAppID}
}

// AssistantThreadStarted is the assistant_thread_started event of user opening a new thread
// (channel, threadTS) with the app.
func AssistantThreadStarted(user, channel, threadTS string) map[string]any {
	return map[string]any{"type": "assistant_thread_started", "event_ts": threadTS,
		"assistant_thread": map[string]any{"user_id": user, "channel_id": channel, "thread_ts": threadTS, "context": map[string]any{}}}
}

// AgentSessionStopped is the agent_session_stopped event of user clicking Slack's native stop
// button in thread (channel, threadTS).
func AgentSessionStopped(user, channel, threadTS, eventTS string) map[string]any {
	return map[string]any{"type": "agent_session_stopped", "channel": channel, "thread_ts": threadTS, "user": user,
		"streaming_message_ts": []string{}, "event_ts": eventTS}
}

// FormRequest builds a signed form POST to url, as Slack sends interactivity (form with
// payload=JSON) and slash commands (the command's fields) to a request URL.
func FormRequest(url, secret string, form map[string]string, ts time.Time) *http.Request {
	v := neturl.Values{}
	for k, val := range form {
		v.Set(k, val)
	}
	body := []byte(v.Encode())
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		panic(fmt.Sprintf("slacktest: bad url %q: %v", url, err)) // test helper
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", Sign(secret, stamp, body))
	return req
}

// PayloadForm is the form of an interactivity request carrying payload.
func PayloadForm(payload map[string]any) map[string]string {
	b, _ := json.Marshal(payload)
	return map[string]string{"payload": string(b)}
}

// CommandForm is the form of a slash command request.
func CommandForm(cmd map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range cmd {
		out[k] = fmt.Sprint(v)
	}
	return out
}
