package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack/slackevents"
)

const (
	maxEventBody    = 1 << 20
	maxTimestampAge = 5 * time.Minute
)

// EventsHandler returns the handler for POST /slack/events (the HTTP Events API). Every request
// must carry a valid X-Slack-Signature made with the signing secret and a timestamp at most five
// minutes old (else 401 and nothing happens). url_verification is answered with its challenge.
// Event callbacks are acknowledged with 200 at once and handled after the response; when Run is
// not running or the queue is full the answer is 503, so Slack redelivers later. Retries
// (X-Slack-Retry-Num) are dropped when the event is already queued or handled. Interactivity
// and slash commands (form-encoded) are answered once the sink took them: see serveInteraction.
func (c *Channel) EventsHandler() http.Handler {
	return http.HandlerFunc(c.serveEvents)
}

func (c *Channel) serveEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "slack events: use POST", http.StatusMethodNotAllowed)
		return
	}
	if c.cfg.SigningSecret == "" {
		http.Error(w, "slack events: no signing secret configured (set SLACK_SIGNING_SECRET)", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	if err != nil {
		code, msg := bodyError(err)
		http.Error(w, "slack events: "+msg, code)
		return
	}
	if err := verifySignature(r.Header, body, c.cfg.SigningSecret, c.cfg.Clock.Now()); err != nil {
		c.log.Warn("slack events request refused", "error", err, "remote", r.RemoteAddr)
		http.Error(w, "slack events: "+err.Error(), http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		c.serveInteraction(w, r, body)
		return
	}
	var outer struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
		EventID   string `json:"event_id"`
		Minute    int    `json:"minute_rate_limited"`
	}
	if err := json.Unmarshal(body, &outer); err != nil {
		http.Error(w, "slack events: body is not JSON", http.StatusBadRequest)
		return
	}
	switch outer.Type {
	case slackevents.URLVerification:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": outer.Challenge})
		return
	case slackevents.AppRateLimited:
		c.log.Warn("slack app rate limited: Slack is dropping events for a minute", "minute", outer.Minute)
		w.WriteHeader(http.StatusOK)
		return
	case slackevents.CallbackEvent:
	default:
		w.WriteHeader(http.StatusOK)
		return
	}
	ea, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	if err != nil {
		// An event type the channel does not parse: acknowledge, so Slack does not retry it.
		c.log.Debug("slack event ignored", "event_id", outer.EventID, "error", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	j, ok := jobFrom(ea, "http")
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	j.retry, _ = strconv.Atoi(r.Header.Get("X-Slack-Retry-Num"))
	c.takeEvent(w, r, j)
}

// takeEvent queues j and answers Slack 200 only once the sink took it (the pipeline records it
// durably first), as a Socket Mode envelope is acknowledged: Slack never redelivers what was
// answered 200, so a 200 before that lost the event when the process died in between. Not
// taken within Slack's window (or refused): 503, and Slack's retry is dropped as a duplicate if
// this copy is taken after all.
func (c *Channel) takeEvent(w http.ResponseWriter, r *http.Request, j job) {
	taken := make(chan struct{})
	var once sync.Once
	j.ack = func() { once.Do(func() { close(taken) }) }
	if !c.enqueue(j) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slack events: busy", http.StatusServiceUnavailable)
		return
	}
	select {
	case <-taken:
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
	case <-c.cfg.Clock.After(httpInteractionWait):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slack events: not taken within Slack's window", http.StatusServiceUnavailable)
	}
}

// verifySignature checks Slack's v0 request signature and the timestamp's age.
// https://docs.slack.dev/authentication/verifying-requests-from-slack
func verifySignature(h http.Header, body []byte, secret string, now time.Time) error {
	sig := h.Get("X-Slack-Signature")
	tsText := h.Get("X-Slack-Request-Timestamp")
	if sig == "" || tsText == "" {
		return fmt.Errorf("%w: missing X-Slack-Signature or X-Slack-Request-Timestamp header", ErrInvalidSignature)
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad X-Slack-Request-Timestamp %q", ErrInvalidSignature, tsText)
	}
	if age := now.Sub(time.Unix(ts, 0)); age > maxTimestampAge || age < -maxTimestampAge {
		return fmt.Errorf("%w: timestamp is %s away from now (limit 5m): replayed request or clock skew", ErrInvalidSignature, age.Round(time.Second))
	}
	hexSig, ok := strings.CutPrefix(sig, "v0=")
	if !ok {
		return fmt.Errorf("%w: unsupported signature version", ErrInvalidSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%w: signature is not hex", ErrInvalidSignature)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + tsText + ":"))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("%w: signature mismatch (wrong signing secret?)", ErrInvalidSignature)
	}
	return nil
}

// bodyError names why a request body could not be read, for the answer: too large (413), not
// received within the server's body deadline (408: a client trickling its body), or cut off (400).
func bodyError(err error) (int, string) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, "request body over 1 MiB"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout, "request body not received in time (http.body_timeout)"
	}
	return http.StatusBadRequest, "request body unreadable: " + err.Error()
}
