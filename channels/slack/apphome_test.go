package slack

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/channels/slack/slacktest"
)

func waitSrv(t *testing.T, srv *slacktest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitFor(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Opening the Messages tab the first time posts one welcome with the suggested prompts; a
// second open, and a user whose DM already holds messages, get none. Nothing is a turn.
func TestAppHomeMessagesTabWelcomesOnce(t *testing.T) {
	e := newEnv(t, true, func(c *Config) {
		c.SuggestedPrompts = []SuggestedPrompt{{Title: "Summarize", Message: "Summarize my unread threads"}}
	})
	e.push(slacktest.AppHomeOpened("U1", "D7", "messages", "1700000800.000100"), slacktest.Delivery{})
	waitSrv(t, e.srv, "welcome in D7", func() bool { return len(e.srv.BotMessages("D7")) == 1 })
	w := e.srv.BotMessages("D7")[0]
	for _, want := range []string{"Hi", "*Summarize*: Summarize my unread threads", "/echogate help"} {
		if !strings.Contains(w.Text, want) {
			t.Errorf("welcome = %q, want it to contain %q", w.Text, want)
		}
	}
	e.waitAck(e.push(slacktest.AppHomeOpened("U1", "D7", "messages", "1700000800.000200"), slacktest.Delivery{}))
	if n := len(e.srv.BotMessages("D7")); n != 1 {
		t.Errorf("after a second open: %d bot messages in D7, want 1 (welcomed once)", n)
	}

	e.srv.AddMessage(slacktest.Message{Channel: "D8", TS: "1700000000.000100", User: "U2", Text: "hello"})
	e.waitAck(e.push(slacktest.AppHomeOpened("U2", "D8", "messages", "1700000800.000300"), slacktest.Delivery{}))
	if n := len(e.srv.BotMessages("D8")); n != 0 {
		t.Errorf("a DM with history got %d welcome messages, want 0", n)
	}
	if evs, _ := e.rec.snapshot(); len(evs) != 0 {
		t.Errorf("app_home_opened reached the sink as %d events, want none", len(evs))
	}
}

// Opening the Home tab publishes the home view (views.publish) once per user.
func TestAppHomeTabPublishesView(t *testing.T) {
	e := newEnv(t, true, func(c *Config) {
		c.SuggestedPrompts = []SuggestedPrompt{{Title: "Status", Message: "What is the deploy status?"}}
	})
	e.push(slacktest.AppHomeOpened("U1", "D7", "home", "1700000900.000100"), slacktest.Delivery{})
	waitSrv(t, e.srv, "home view of U1", func() bool { return e.srv.HomeView("U1") != "" })
	v := e.srv.HomeView("U1")
	for _, want := range []string{`"type":"home"`, "What is the deploy status?", "/echogate help"} {
		if !strings.Contains(v, want) {
			t.Errorf("home view = %s, want it to contain %q", v, want)
		}
	}
	e.waitAck(e.push(slacktest.AppHomeOpened("U1", "D7", "home", "1700000900.000200"), slacktest.Delivery{}))
	if n := len(e.srv.CallsTo("views.publish")); n != 1 {
		t.Errorf("views.publish calls = %d, want 1 (the view is static)", n)
	}
	if n := len(e.srv.BotMessages("D7")); n != 0 {
		t.Errorf("the home tab posted %d messages, want 0", n)
	}
}

// A user's display name is resolved in the background on the first event (which goes on
// without it), reported through NameResolved, and carried by the user's later events.
func TestActorNameResolvedInBackground(t *testing.T) {
	resolved := make(chan [2]string, 4)
	e := newEnv(t, true, func(c *Config) {
		c.NameResolved = func(user, name string) { resolved <- [2]string{user, name} }
	})
	e.srv.AddUser(slacktest.User{ID: "U5", Name: "ann.l", DisplayName: "ann"})
	e.push(slacktest.DM("D5", "U5", "1700001000.000100", "hi"), slacktest.Delivery{})
	select {
	case got := <-resolved:
		if got != [2]string{"U5", "ann"} {
			t.Errorf("NameResolved(%q, %q), want (U5, ann)", got[0], got[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("NameResolved was not called")
	}
	e.rec.waitEvents(1)
	e.push(slacktest.DM("D5", "U5", "1700001000.000200", "again"), slacktest.Delivery{})
	e.rec.waitEvents(2)
	evs, _ := e.rec.snapshot()
	if evs[1].Actor.Name != "ann" {
		t.Errorf("second event's Actor.Name = %q, want ann (cached)", evs[1].Actor.Name)
	}
	if n := len(e.srv.CallsTo("users.info")); n != 1 {
		t.Errorf("users.info calls = %d, want 1", n)
	}

	// A user users.info does not know is asked about once, not at every event.
	for i, ts := range []string{"1700001000.000300", "1700001000.000400", "1700001000.000500"} {
		e.push(slacktest.DM("D6", "U6", ts, "hello"), slacktest.Delivery{})
		e.rec.waitEvents(3 + i)
		if i == 0 { // the lookup failed and is remembered (else the next event would queue it again)
			// Internal state with nothing to wait on: yield until the worker is done with U6.
			for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
				_, missed := e.ch.nameMiss.Get("U6")
				if _, queued := e.ch.pending.Load("U6"); missed && !queued {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("U6's failed lookup was not remembered")
				}
			}
		}
	}
	if n := len(e.srv.CallsTo("users.info")); n != 2 {
		t.Errorf("users.info calls = %d, want 2 (one for U5, one for the unknown U6)", n)
	}
}
