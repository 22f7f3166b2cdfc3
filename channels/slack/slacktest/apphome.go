package slacktest

import "encoding/json"

// AppHomeOpened is the app_home_opened event of user opening the app's tab ("messages" or
// "home"); channel is the user's DM with the app. Deliver it with Push.
func AppHomeOpened(user, channel, tab, eventTS string) map[string]any {
	return map[string]any{"type": "app_home_opened", "user": user, "channel": channel, "tab": tab, "event_ts": eventTS}
}

// publishLocked answers views.publish as Slack does: the view must be JSON of type "home" and
// the user known by id; the view is kept per user (HomeView).
func (s *Server) publishLocked(p map[string]string) (int, map[string]any) {
	if p["user_id"] == "" || p["view"] == "" {
		return fail("invalid_arguments")
	}
	var v struct {
		Type   string            `json:"type"`
		Blocks []json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(p["view"]), &v); err != nil || v.Type != "home" || len(v.Blocks) == 0 {
		return fail("invalid_arguments")
	}
	if s.homeViews == nil {
		s.homeViews = map[string]string{}
	}
	s.homeViews[p["user_id"]] = p["view"]
	s.notifyLocked()
	return 200, map[string]any{"ok": true, "view": map[string]any{"id": "V" + p["user_id"], "type": "home"}}
}

// HomeView returns the JSON of the home view last published for user ("" when none).
func (s *Server) HomeView(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.homeViews[user]
}
