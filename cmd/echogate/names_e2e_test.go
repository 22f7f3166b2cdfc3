package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/channels/slack/slacktest"
)

// Console for people: users.info knows U123 as "ann"; after her first message the admin API
// lists her name next to her id (resolved in the background, never in the event's way), the
// turn she started carries that id, and a second message needs no second users.info.
func TestE2ESlackNamesNextToIDs(t *testing.T) {
	p, srv, g, _ := slackGateway(t, "")
	srv.AddUser(slacktest.User{ID: "U123", Name: "ann.l", DisplayName: "ann"})
	c := p.newConv(t, "[names-1]")
	p.open(t, c, "U123", "hello [names-1]")
	c.waitMsg(t, echoText)

	// The answer's first text (a native stream's) can show before the turn's record is
	// committed: the record is written behind, and waited for once the streamed message exists.
	var turns []struct {
		UserID string `json:"user_id"`
	}
	for deadline := time.Now().Add(waitTimeout); ; {
		getJSON(t, g.base+"/api/turns?limit=5", &turns)
		if len(turns) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling an HTTP endpoint: nothing to wait on
	}
	if len(turns) == 0 || turns[0].UserID != "slack:U123" {
		t.Fatalf("/api/turns = %+v, want a turn of slack:U123", turns)
	}
	var got struct {
		Names map[string]string `json:"names"`
	}
	deadline := time.Now().Add(waitTimeout)
	for got.Names["slack:U123"] == "" && time.Now().Before(deadline) {
		getJSON(t, g.base+"/api/names?ids=slack:U123,slack:U0NOBODY", &got)
		if got.Names["slack:U123"] == "" {
			time.Sleep(10 * time.Millisecond) // polling an HTTP endpoint: nothing to wait on
		}
	}
	if got.Names["slack:U123"] != "ann" || len(got.Names) != 1 {
		t.Fatalf("/api/names = %v, want slack:U123 → ann only", got.Names)
	}

	p.say(t, c, "U123", "again [names-1]")
	c.waitMsgs(t, 2, echoText)
	if n := len(srv.CallsTo("users.info")); n != 1 {
		t.Errorf("users.info calls = %d, want 1 (the name is cached)", n)
	}

	resp, err := http.Get(g.base + "/api/names")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /api/names without ids = %d, want 400", resp.StatusCode)
	}
	// The console asks for the names of the ids it shows (no browser here: the script is
	// checked to call the endpoint and to render "name (id)").
	resp, err = http.Get(g.base + "/assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`api("api/names?ids="`, `n + " (" + id + ")"`, `who(t.user_id)`, `who(p.requested_by)`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("console.js lacks %s", want)
		}
	}
}
