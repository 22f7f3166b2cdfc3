package slack

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/echogate/echogate/channels/slack/slacktest"
)

// postEvent sends a signed Events API callback (a DM) and returns the HTTP status, once answered.
func (h *interactionHarness) postEvent(n int) <-chan int {
	inner := slacktest.DM("D9", "U9", fmt.Sprintf("1700000900.%06d", n), "hello")
	body := slacktest.Callback(slacktest.DefaultTeamID, fmt.Sprintf("EvACK%04d", n), inner)
	req := slacktest.EventsRequest("/slack/events", testSecret, body, time.Now(), 0)
	code := make(chan int, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ch.EventsHandler().ServeHTTP(w, req)
		code <- w.Code
	}()
	return code
}

// An Events API event callback is answered 200 only once the sink took its event (the pipeline
// records it durably first): a process killed between an earlier 200 and the sink lost the
// event, as Slack does not redeliver what was answered 200 (the replica chaos test lost one
// that way). One the sink refused is answered 503 once Slack's window is up, so Slack retries.
func TestEventsAPIAnsweredAfterTheSinkTookIt(t *testing.T) {
	h := newInteractionHarness(t)
	for n, tc := range []struct {
		name string
		sink error
		want int
	}{
		{"taken", nil, http.StatusOK},
		{"refused", errors.New("pipeline: not accepting"), http.StatusServiceUnavailable},
	} {
		code := h.postEvent(n)
		h.waitEntered(tc.name)
		window := h.waitFor(tc.name)
		select {
		case c := <-code:
			t.Fatalf("%s: answered %d before the sink returned", tc.name, c)
		default:
		}
		h.release <- tc.sink
		if tc.want != http.StatusOK {
			window <- time.Now() // Slack's window passes
		}
		if got := h.wait(tc.name, code); got != tc.want {
			t.Errorf("%s: HTTP answer = %d, want %d", tc.name, got, tc.want)
		}
	}
}
