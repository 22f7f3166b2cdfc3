package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// --- Events API helpers ---

// Callback returns the JSON body of an event_callback carrying inner.
func Callback(teamID, eventID string, inner map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"token": "verification-token", "team_id": teamID, "api_app_id": DefaultAppID, "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(), "event": inner,
		"authorizations": []any{map[string]any{"team_id": teamID, "user_id": DefaultBotUserID, "is_bot": true}},
	})
	return b
}

// URLVerification returns the body of a url_verification request.
func URLVerification(challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"token": "verification-token", "challenge": challenge, "type": "url_verification"})
	return b
}

// EventsRequest builds a POST to url with body, signed with secret at time ts, as Slack sends
// it. retry > 0 sets X-Slack-Retry-Num.
func EventsRequest(url, secret string, body []byte, ts time.Time, retry int) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		panic(fmt.Sprintf("slacktest: bad url %q: %v", url, err)) // test helper
	}
	req.Header.Set("Content-Type", "application/json")
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", Sign(secret, stamp, body))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	return req
}

// --- inner event builders ---

// Mention is an app_mention event. threadTS may be empty.
func Mention(channel, user, ts, threadTS, text string) map[string]any {
	e := map[string]any{"type": "app_mention", "channel": channel, "user": user, "ts": ts, "event_ts": ts, "text": text}
	if threadTS != "" {
		e["thread_ts"] = threadTS
	}
	return e
}

// ChannelMessage is a message event in a channel (channel_type "channel").
func ChannelMessage(channel, user, ts, threadTS, text string) map[string]any {
	e := map[string]any{"type": "message", "channel": channel, "channel_type": "channel", "user": user, "ts": ts, "event_ts": ts, "text": text}
	if threadTS != "" {
		e["thread_ts"] = threadTS
	}
	return e
}

// DM is a message event in an IM (channel_type "im").
func DM(channel, user, ts, text string) map[string]any {
	return map[string]any{"type": "message", "channel": channel, "channel_type": "im", "user": user, "ts": ts, "event_ts": ts, "text": text}
}

// BotMessage is a message event posted by a bot (bot_id set).
func BotMessage(channel, channelType, user, botID, ts, text string) map[string]any {
	return map[string]any{"type": "message", "channel": channel, "channel_type": channelType, "user": user, "bot_id": botID, "ts": ts, "event_ts": ts, "text": text}
}

// Reaction is a reaction_added event on the message (channel, ts) written by itemUser.
func Reaction(user, name, channel, ts, itemUser string) map[string]any {
	return map[string]any{"type": "reaction_added", "user": user, "reaction": name, "item_user": itemUser,
		"item": map[string]any{"type": "message", "channel": channel, "ts": ts}, "event_ts": ts}
}

// applyChunks applies the chunks of a streaming call (markdown_text and task_update) to m; it
// reports false for chunks that are not JSON or of an unknown type.
func applyChunks(m *Message, raw string) bool {
	if raw == "" {
		return true
	}
	var chunks []struct {
		Type, Text, ID, Title, Status string
	}
	if json.Unmarshal([]byte(raw), &chunks) != nil {
		return false
	}
	for _, c := range chunks {
		switch c.Type {
		case "markdown_text":
			m.Text += c.Text
		case "task_update":
			found := false
			for i := range m.Tasks {
				if m.Tasks[i].ID == c.ID {
					m.Tasks[i].Status, found = c.Status, true
				}
			}
			if !found {
				m.Tasks = append(m.Tasks, Task{ID: c.ID, Title: c.Title, Status: c.Status})
			}
		case "plan_update":
			m.PlanTitle = c.Title
		case "blocks":
		default:
			return false
		}
	}
	return true
}
