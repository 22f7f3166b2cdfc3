package slack

import (
	"encoding/json"
	"testing"

	"github.com/slack-go/slack"
)

// Interaction payloads come from outside: decoding and mapping one never panics, and a job is
// only made for the approval buttons.
func FuzzInteractionJob(f *testing.F) {
	seed, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]any{"id": "U1"},
		"container": map[string]any{"channel_id": "C1", "message_ts": "1.2"},
		"actions":   []any{map[string]any{"action_id": "echogate_approve", "action_ts": "1.3"}}})
	f.Add(seed)
	f.Add([]byte(`{"type":"block_actions","actions":[{"action_id":"other"}]}`))
	f.Add([]byte(`{"type":"view_submission"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var cb slack.InteractionCallback
		if json.Unmarshal(data, &cb) != nil {
			return
		}
		j, ok := interactionJob(cb, "fuzz")
		if !ok {
			return
		}
		bp, isPress := j.inner.(*buttonPress)
		if !isPress || bp.channel == "" || bp.ts == "" || bp.user == "" || buttonReactions[bp.actionID] == "" {
			t.Fatalf("job %+v for payload %s: want a complete press of an approval button", j.inner, data)
		}
	})
}
