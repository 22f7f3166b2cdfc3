package slack

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
)

// httpInteractionWait bounds how long an interactivity request (a button press, a slash
// command over HTTP) waits for the sink to take its event before it is answered: Slack wants
// the answer within 3 s and shows the user an error after that; the rest is left for the
// network.
const httpInteractionWait = 2500 * time.Millisecond

// serveInteraction handles what Slack posts form-encoded to the events URL: interactivity
// (payload=…, the approval buttons) and slash commands (command=…). Slack does not redeliver
// these, so the request is answered 200 only once the sink took the event (the pipeline records
// a decision durably before it returns), as Socket Mode envelopes are acknowledged:
//   - the sink took it, or it was no event (an unmatched press is answered privately): 200;
//   - the queue was full, or the sink refused it: 503, and Slack shows the user the failure;
//   - the worker had not reached it within httpInteractionWait: the event is withdrawn (the
//     worker drops it) and the answer is 503, so what the user sees (an error) is what happened;
//   - the sink was already taking it then: the request waits for that outcome (a durable write,
//     normally milliseconds); an answer later than Slack's window is logged.
//
// Interactions that are not the gateway's are answered 200 at once.
func (c *Channel) serveInteraction(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "slack events: form body unreadable", http.StatusBadRequest)
		return
	}
	var j job
	var ok bool
	switch {
	case form.Get("payload") != "":
		var cb slack.InteractionCallback
		if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
			http.Error(w, "slack events: interaction payload is not JSON", http.StatusBadRequest)
			return
		}
		j, ok = interactionJob(cb, "http")
	case form.Get("command") != "":
		j, ok = c.commandJob(slack.SlashCommand{
			TeamID: form.Get("team_id"), ChannelID: form.Get("channel_id"), UserID: form.Get("user_id"), UserName: form.Get("user_name"),
			Command: form.Get("command"), Text: form.Get("text"), ResponseURL: form.Get("response_url"), TriggerID: form.Get("trigger_id"),
		}, "http")
	}
	if !ok {
		w.WriteHeader(http.StatusOK) // not the gateway's
		return
	}
	since := c.cfg.Clock.Now()
	wait := &interactionWait{done: make(chan bool, 1)}
	j.wait = wait
	if !c.enqueue(j) {
		c.log.Warn("slack interaction not taken: event queue full; answered 503 (Slack tells the user)")
		http.Error(w, "slack events: busy", http.StatusServiceUnavailable)
		return
	}
	var taken bool
	select {
	case taken = <-wait.done:
	case <-r.Context().Done():
		wait.giveUp()
		return
	case <-c.cfg.Clock.After(httpInteractionWait):
		if wait.giveUp() {
			c.log.Warn("slack interaction withdrawn: not taken within the wait for Slack's 3 s window; answered 503 (Slack tells the user)")
			http.Error(w, "slack events: busy", http.StatusServiceUnavailable)
			return
		}
		select { // the sink is taking it
		case taken = <-wait.done:
		case <-r.Context().Done():
			return
		}
		if d := c.cfg.Clock.Now().Sub(since); d > interactionAckWindow {
			c.log.Warn("slack interaction answered after Slack's 3 s window", "after", d, "taken", taken)
		}
	}
	if !taken {
		http.Error(w, "slack events: the gateway could not take this interaction", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// interactionWait connects an HTTP interactivity request to the worker handling its job: the
// worker claims the job before the sink sees it, the request may give up before that, and the
// worker reports the outcome (settle).
type interactionWait struct {
	state atomic.Int32 // 0 waiting, 1 claimed by the worker, 2 given up by the request
	done  chan bool    // the outcome (taken), buffered: the worker never blocks on it
}

// claim is the worker's, right before the sink: false when the request gave up (the event is
// dropped: the user was told it failed).
func (w *interactionWait) claim() bool { return w.state.CompareAndSwap(0, 1) }

// giveUp is the request's: true when the worker had not claimed the job, which it then drops.
func (w *interactionWait) giveUp() bool { return w.state.CompareAndSwap(0, 2) }

// settle reports whether the event was taken (or was no event); it never blocks.
func (w *interactionWait) settle(taken bool) {
	select {
	case w.done <- taken:
	default:
	}
}
