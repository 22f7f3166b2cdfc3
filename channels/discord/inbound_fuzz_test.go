package discord

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

const fuzzBot = "100000000000000001"

// FuzzMapMessage feeds any MESSAGE_CREATE payload through the SDK's decoding and mapMessage: no
// panic, and a mapped event has an id, a channel and an author.
func FuzzMapMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","channel_id":"2","guild_id":"3","content":"<@100000000000000001> hi","author":{"id":"4","username":"ann"},"mentions":[{"id":"100000000000000001"}]}`,
		`{"id":"1","channel_id":"2","content":"dm text","author":{"id":"4","username":"ann"}}`,
		`{"id":"1","channel_id":"2","content":"","author":{"id":"4","bot":true}}`,
		`{"id":"1","channel_id":"2","content":"x","author":null,"attachments":[{"id":"9","filename":"a.pdf","size":-1,"url":"https://cdn.discordapp.com/a.pdf"}]}`,
		`{"id":"1","channel_id":"2","message_reference":{"message_id":"0"},"referenced_message":{"id":"0","author":{"id":"100000000000000001"}},"author":{"id":"4"},"content":"reply"}`,
		`{}`, `null`, `[]`,
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, requireMention bool) {
		var m discordgo.Message
		if json.Unmarshal(data, &m) != nil {
			return
		}
		ev, why := mapMessage(&m, fuzzBot, requireMention, time.Unix(0, 0))
		if why == "" && (ev.ID == "" || ev.Conversation.Channel == "" || ev.Actor.ID == "") {
			t.Fatalf("mapMessage(%s) = %+v: an event without id, channel or author", data, ev)
		}
	})
}

// FuzzMapReaction feeds any MESSAGE_REACTION_ADD gateway payload through the decoding of
// onRawEvent and mapReaction.
func FuzzMapReaction(f *testing.F) {
	for _, s := range []string{
		`{"user_id":"4","channel_id":"2","message_id":"1","guild_id":"3","message_author_id":"100000000000000001","emoji":{"name":"✅"}}`,
		`{"user_id":"4","channel_id":"2","message_id":"1","emoji":{"name":"custom","id":"77"},"member":{"user":{"id":"4","bot":false}}}`,
		`{"user_id":"100000000000000001","emoji":{"name":"🛑"}}`, `{"emoji":null}`, `{}`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, own bool) {
		var r reactionAdd
		if json.Unmarshal(data, &r) != nil {
			return
		}
		ev, why := mapReaction(r, fuzzBot, own, time.Unix(0, 0))
		if why == "" && (ev.ID == "" || ev.Reaction == "") {
			t.Fatalf("mapReaction(%s) = %+v: an event without id or reaction", data, ev)
		}
	})
}
