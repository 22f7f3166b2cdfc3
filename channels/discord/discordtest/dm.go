package discordtest

import (
	"encoding/json"
	"net/http"
)

// openDM answers POST /users/@me/channels (the bot opening a DM with a user): the user's DM
// channel, made on first use. Messages the bot posts there are read with BotMessages(DMChannel(user)).
func (s *Server) openDM(w http.ResponseWriter, body []byte) int {
	var req struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.RecipientID == "" {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "400: recipient_id is required", Code: 50035})
		return http.StatusBadRequest
	}
	s.mu.Lock()
	ch := s.dmChannelLocked(req.RecipientID)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": ch, "type": 1, "recipients": []any{map[string]any{"id": req.RecipientID}}})
	return http.StatusOK
}
