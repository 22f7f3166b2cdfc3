package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Callback is one interaction callback (POST /interactions/{id}/{token}/callback): how the bot
// acknowledged an interaction.
type Callback struct {
	InteractionID string
	Token         string
	Type          int   // 5 deferred reply, 6 deferred update, 4 reply…
	Flags         int64 // 64: ephemeral
}

// FollowUp is an edit of an interaction's original response (PATCH
// /webhooks/{app}/{token}/messages/@original): the bot's answer to a deferred interaction.
type FollowUp struct {
	AppID, Token, Content string
}

// CommandSet is one bulk overwrite of application commands (PUT
// /applications/{app}/commands or …/guilds/{guild}/commands).
type CommandSet struct {
	AppID, GuildID string
	Names          []string
	Body           []byte
}

// Callbacks returns the interaction callbacks received, in order.
func (s *Server) Callbacks() []Callback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Callback(nil), s.callbacks...)
}

// FollowUps returns the edits of interaction responses received, in order.
func (s *Server) FollowUps() []FollowUp {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FollowUp(nil), s.followUps...)
}

// CommandSets returns the application command overwrites received, in order.
func (s *Server) CommandSets() []CommandSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CommandSet(nil), s.commandSets...)
}

// SetThread marks channelID as a public thread of guildID (GET /channels answers type 11).
func (s *Server) SetThread(guildID, channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guildOf[channelID] = guildID
	if s.threads == nil {
		s.threads = map[string]bool{}
	}
	s.threads[channelID] = true
}

// handleInteractionREST answers the interaction, webhook and application routes; ok is false
// for other paths.
func (s *Server) handleInteractionREST(w http.ResponseWriter, method string, parts []string, body []byte) (int, bool) {
	switch {
	case method == http.MethodPost && len(parts) == 4 && parts[0] == "interactions" && parts[3] == "callback":
		var req struct {
			Type int `json:"type"`
			Data *struct {
				Flags int64 `json:"flags"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Type == 0 {
			writeJSON(w, http.StatusBadRequest, apiError{Message: "Invalid interaction response", Code: 50035})
			return http.StatusBadRequest, true
		}
		cb := Callback{InteractionID: parts[1], Token: parts[2], Type: req.Type}
		if req.Data != nil {
			cb.Flags = req.Data.Flags
		}
		s.mu.Lock()
		_, known := s.interactions[parts[1]]
		if known {
			s.callbacks = append(s.callbacks, cb)
		}
		s.mu.Unlock()
		if !known {
			writeJSON(w, http.StatusNotFound, apiError{Message: "Unknown interaction", Code: 10062})
			return http.StatusNotFound, true
		}
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, true
	case method == http.MethodPatch && len(parts) == 5 && parts[0] == "webhooks" && parts[3] == "messages" && parts[4] == "@original":
		var req struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		s.followUps = append(s.followUps, FollowUp{AppID: parts[1], Token: parts[2], Content: req.Content})
		id := s.newID()
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"id": id, "channel_id": "", "content": req.Content, "flags": 64,
			"author": wireUser{ID: s.opts.BotID, Username: s.opts.BotName, Bot: true}, "timestamp": "2026-01-01T00:00:00Z"})
		return 200, true
	case method == http.MethodPut && len(parts) >= 3 && parts[0] == "applications" && parts[len(parts)-1] == "commands":
		set := CommandSet{AppID: parts[1], Body: body}
		if len(parts) == 5 && parts[2] == "guilds" {
			set.GuildID = parts[3]
		}
		var cmds []map[string]any
		if err := json.Unmarshal(body, &cmds); err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Message: "Invalid Form Body", Code: 50035})
			return http.StatusBadRequest, true
		}
		for i, c := range cmds {
			name, _ := c["name"].(string)
			set.Names = append(set.Names, name)
			c["id"] = strconv.Itoa(900 + i)
			c["application_id"] = parts[1]
		}
		s.mu.Lock()
		s.commandSets = append(s.commandSets, set)
		s.mu.Unlock()
		writeJSON(w, 200, cmds)
		return 200, true
	}
	return 0, false
}

// listMessages answers GET /channels/{id}/messages?limit=&before=: newest first, as Discord.
func (s *Server) listMessages(w http.ResponseWriter, channelID string, q map[string][]string) int {
	limit := 50
	if v := first(q["limit"]); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= 100 {
			limit = n
		}
	}
	before := first(q["before"])
	s.mu.Lock()
	out := []wireMessage{}
	for i := len(s.order) - 1; i >= 0 && len(out) < limit; i-- {
		m := s.messages[s.order[i]]
		if m.ChannelID != channelID || m.Deleted || (before != "" && !idLess(m.ID, before)) {
			continue
		}
		wm := s.wireLocked(m, true)
		wm.Nonce = "" // Discord shows a nonce only to the create and in MESSAGE_CREATE
		out = append(out, s.visibleLocked(wm, false))
	}
	s.mu.Unlock()
	writeJSON(w, 200, out)
	return 200
}

func first(v []string) string {
	if len(v) > 0 {
		return v[0]
	}
	return ""
}

func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// visibleLocked strips what an app without the MESSAGE_CONTENT intent does not see: the
// content of guild messages that neither mention it nor are its own (the current connection's
// Identify decides).
func (s *Server) visibleLocked(m wireMessage, mentionsBot bool) wireMessage {
	if s.contentIntentLocked() || m.GuildID == "" || m.Author.ID == s.opts.BotID || mentionsBot || strings.Contains(m.Content, "<@"+s.opts.BotID+">") {
		return m
	}
	m.Content = ""
	m.Attachments = []any{}
	return m
}

func (s *Server) contentIntentLocked() bool {
	if len(s.identifies) == 0 {
		return true
	}
	return s.identifies[len(s.identifies)-1].Intents&(1<<15) != 0
}

// ClickButton dispatches INTERACTION_CREATE for user pressing the button customID on the bot's
// message messageID, and returns the interaction id.
func (s *Server) ClickButton(messageID string, user User, customID string) (string, error) {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok {
		s.mu.Unlock()
		return "", errUnknownMessage(messageID)
	}
	msg := s.wireLocked(m, false)
	id, token := s.newInteractionLocked()
	s.mu.Unlock()
	d := map[string]any{"id": id, "application_id": s.opts.BotID, "type": 3, "token": token, "version": 1,
		"channel_id": msg.ChannelID, "message": msg, "data": map[string]any{"custom_id": customID, "component_type": 2}}
	s.addInvoker(d, msg.GuildID, user)
	s.Dispatch("INTERACTION_CREATE", d)
	return id, nil
}

// RunCommand dispatches INTERACTION_CREATE for user running /name sub [option=value] in
// channelID (of guildID, or a DM when guildID is empty), and returns the interaction id.
func (s *Server) RunCommand(guildID, channelID string, user User, name, sub string, options map[string]string) string {
	s.mu.Lock()
	if guildID != "" {
		s.guildOf[channelID] = guildID
	}
	id, token := s.newInteractionLocked()
	s.mu.Unlock()
	var opts []any
	for k, v := range options {
		opts = append(opts, map[string]any{"name": k, "type": 3, "value": v})
	}
	data := map[string]any{"id": "900", "name": name, "type": 1,
		"options": []any{map[string]any{"name": sub, "type": 1, "options": opts}}}
	d := map[string]any{"id": id, "application_id": s.opts.BotID, "type": 2, "token": token, "version": 1, "channel_id": channelID, "data": data}
	s.addInvoker(d, guildID, user)
	s.Dispatch("INTERACTION_CREATE", d)
	return id
}

func (s *Server) addInvoker(d map[string]any, guildID string, user User) {
	u := wireUser{ID: user.ID, Username: user.Username, GlobalName: user.GlobalName, Bot: user.Bot}
	if guildID != "" {
		d["guild_id"] = guildID
		d["member"] = map[string]any{"user": u, "roles": []string{}, "permissions": "0"}
	} else {
		d["user"] = u
	}
}

func (s *Server) newInteractionLocked() (id, token string) {
	id = s.newID()
	token = "itoken-" + id
	if s.interactions == nil {
		s.interactions = map[string]string{}
	}
	s.interactions[id] = token
	return id, token
}

type errUnknownMessage string

func (e errUnknownMessage) Error() string { return "discordtest: unknown message " + string(e) }
