package discord

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// INTERACTION_CREATE payloads come from outside: mapping one never panics, and an event is
// only made for the approval buttons and the /echogate command, never for a bot.
func FuzzMapInteraction(f *testing.F) {
	f.Add([]byte(`{"id":"1","application_id":"9","type":3,"token":"t","channel_id":"5","message":{"id":"7"},"member":{"user":{"id":"3","username":"ann"}},"data":{"custom_id":"echogate_approve","component_type":2}}`))
	f.Add([]byte(`{"id":"2","application_id":"9","type":2,"token":"t","channel_id":"5","user":{"id":"3"},"data":{"id":"8","name":"echogate","type":1,"options":[{"name":"model","type":1,"options":[{"name":"name","type":3,"value":"gpt-4o"}]}]}}`))
	f.Add([]byte(`{"type":2,"data":{"name":"echogate","options":[{"name":"usage","type":1}]},"user":{"id":"3","bot":true},"channel_id":"5"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var i discordgo.Interaction
		if json.Unmarshal(data, &i) != nil {
			return
		}
		ev, ack, ok := mapInteraction(&i, "100", time.Unix(0, 0))
		if !ok {
			return
		}
		if ack == nil || ev.ID == "" || ev.Actor.ID == "" || ev.Actor.ID == "100" || ev.Conversation.Channel == "" {
			t.Fatalf("event %+v ack %+v for %s: want a complete event from a person", ev, ack, data)
		}
	})
}
