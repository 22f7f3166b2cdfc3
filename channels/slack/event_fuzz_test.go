package slack

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/slack-go/slack/slackevents"
)

// FuzzNormalizeEvent feeds any bytes through what an Events API or Socket Mode payload meets:
// the signature check, the SDK's event parser, jobFrom and normalize. It must never panic, and a
// normalized event has an id and a conversation.
func FuzzNormalizeEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention","user":"U1","text":"<@UBOT> hi","channel":"C1","ts":"1.0"}}`,
		`{"type":"event_callback","event_id":"Ev2","event":{"type":"message","channel_type":"im","user":"U1","text":"hi","channel":"D1","ts":"2.0","files":[{"id":"F1","name":"a.pdf","mimetype":"application/pdf","size":10}]}}`,
		`{"type":"event_callback","event_id":"Ev3","event":{"type":"message","subtype":"message_changed","channel":"C1","message":{"text":"x"}}}`,
		`{"type":"event_callback","event_id":"Ev4","event":{"type":"reaction_added","user":"U1","reaction":"white_check_mark","item_user":"UBOT","item":{"type":"message","channel":"C1","ts":"1.0"}}}`,
		`{"type":"event_callback","event":{"type":"message","user":"U1","text":"<@UBOT>","channel":"C1","ts":"1.0","thread_ts":"0.5"}}`,
		`{"type":"url_verification","challenge":"abc"}`,
		`{"type":"event_callback","event":null}`, `{"type":"event_callback","event":[]}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s), "v0=0", int64(0))
	}
	ch, err := New(Config{BotToken: "xoxb-fuzz", SigningSecret: "s", APIURL: "http://127.0.0.1:1/", RequestTimeout: 10 * time.Millisecond}, nil)
	if err != nil {
		f.Fatal(err)
	}
	ch.self = identity{UserID: "UBOT", TeamID: "T1"}
	f.Fuzz(func(t *testing.T, body []byte, sig string, ts int64) {
		h := http.Header{}
		h.Set("X-Slack-Signature", sig)
		h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
		_ = verifySignature(h, body, "s", time.Unix(ts, 0))
		ea, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
		if err != nil {
			return
		}
		j, ok := jobFrom(ea, "fuzz")
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		ev, ok := ch.normalize(ctx, j)
		if ok && (ev.ID == "" || ev.Conversation.Platform == "" || ev.Conversation.Channel == "") {
			t.Fatalf("normalize(%q) = %+v: an event without id or conversation", body, ev)
		}
	})
}
