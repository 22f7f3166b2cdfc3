package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// handleDMREST answers POST /users/@me/channels (create DM) as Discord does: the same DM
// channel for a user every time (the one SendDM uses), 400 "Invalid Form Body" (50035) for a
// recipient that is not a snowflake, 400 "Cannot send messages to this user" (50007) for the bot
// itself. ok is false for other routes.
func (s *Server) handleDMREST(w http.ResponseWriter, method string, parts []string, body []byte) (int, bool) {
	if method != http.MethodPost || len(parts) != 3 || parts[0] != "users" || parts[1] != "@me" || parts[2] != "channels" {
		return 0, false
	}
	var req struct {
		RecipientID string `json:"recipient_id"`
	}
	_ = json.Unmarshal(body, &req)
	if _, err := strconv.ParseUint(req.RecipientID, 10, 64); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035,
			"errors": map[string]any{"recipient_id": map[string]any{"_errors": []map[string]string{{"code": "NUMBER_TYPE_COERCE", "message": "Value \"" + req.RecipientID + "\" is not snowflake."}}}}})
		return http.StatusBadRequest, true
	}
	if req.RecipientID == s.opts.BotID {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "Cannot send messages to this user", Code: 50007})
		return http.StatusBadRequest, true
	}
	s.mu.Lock()
	ch := s.dmChannelLocked(req.RecipientID)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": ch, "type": 1, "last_message_id": nil,
		"recipients": []User{{ID: req.RecipientID, Username: "user" + req.RecipientID}}})
	return http.StatusOK, true
}
