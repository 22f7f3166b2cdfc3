package slack

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/channeltest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	servers := map[channels.Channel]*slacktest.Server{}
	srvOf := func(ch channels.Channel) *slacktest.Server {
		mu.Lock()
		defer mu.Unlock()
		return servers[ch]
	}
	type handle struct {
		inner map[string]any
		event string
	}
	waitAck := func(t *testing.T, srv *slacktest.Server, env string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.WaitFor(ctx, func() bool { return srv.Acks(env) > 0 }); err != nil {
			t.Fatalf("envelope %s not acked: %v", env, err)
		}
	}
	seq := 0
	channeltest.RunConformance(t, channeltest.Harness{
		Open: func(t *testing.T) channels.Channel {
			srv := slacktest.New(slacktest.Options{})
			t.Cleanup(srv.Close)
			ch, err := New(Config{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL(), RequestTimeout: 2 * time.Second}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("New = %v", err)
			}
			mu.Lock()
			servers[ch] = srv
			mu.Unlock()
			return ch
		},
		DirectMessage: func(t *testing.T, ch channels.Channel, user, text string) channeltest.Delivery {
			srv := srvOf(ch)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.WaitFor(ctx, func() bool { return srv.OpenConnections() > 0 }); err != nil {
				t.Fatalf("no socket mode connection: %v", err)
			}
			mu.Lock()
			seq++
			h := handle{inner: slacktest.DM("DCONF", user, fmt.Sprintf("1700000001.%06d", seq), text), event: fmt.Sprintf("EvConf%d", seq)}
			mu.Unlock()
			env, err := srv.Push(h.inner, slacktest.Delivery{EventID: h.event})
			if err != nil {
				t.Fatalf("Push = %v", err)
			}
			waitAck(t, srv, env)
			return channeltest.Delivery{Handle: h, Conversation: echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "DCONF", DM: true}}
		},
		Redeliver: func(t *testing.T, ch channels.Channel, d channeltest.Delivery) {
			srv := srvOf(ch)
			h := d.Handle.(handle)
			env, err := srv.Push(h.inner, slacktest.Delivery{EventID: h.event, RetryAttempt: 1})
			if err != nil {
				t.Fatalf("Push = %v", err)
			}
			waitAck(t, srv, env)
		},
		Posted: func(t *testing.T, ch channels.Channel, conv echogate.ConversationRef) []string {
			var out []string
			for _, m := range srvOf(ch).BotMessages(conv.Channel) {
				if m.ThreadTS == conv.Thread {
					out = append(out, m.Text)
				}
			}
			return out
		},
	})
}
