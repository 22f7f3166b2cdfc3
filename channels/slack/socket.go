package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	retry "github.com/echogate/echogate/internal/backoff"
)

// runSocket runs the Socket Mode client until ctx ends or the app token is rejected. slack-go
// reconnects after drops, "disconnect" requests and ping timeouts; the connect gate spaces the
// reconnects with exponential backoff and jitter so replicas do not reconnect in lockstep.
func (c *Channel) runSocket(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.setReady(false, "connecting")
	errc := make(chan error, 1+len(c.moreSocks))
	go func() { errc <- c.sock.RunContext(sctx) }()
	var more sync.WaitGroup
	defer func() { cancel(); more.Wait() }()
	for _, sock := range c.moreSocks {
		more.Go(func() { c.runMoreSocket(sctx, sock, errc) })
	}
	for {
		select {
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			var se slack.SlackErrorResponse
			if errors.As(err, &se) {
				c.setReady(false, "app token rejected: "+se.Err)
				return fmt.Errorf("slack: socket mode: app token rejected (%s): check SLACK_APP_TOKEN (xapp-… with connections:write) and that Socket Mode is enabled: %w", se.Err, &APIError{Method: "apps.connections.open", Code: se.Err})
			}
			c.setReady(false, "socket mode stopped: "+err.Error())
			return fmt.Errorf("slack: socket mode: %w", err)
		case evt := <-c.sock.Events:
			c.socketEvent(sctx, c.sock, evt)
		}
	}
}

// runMoreSocket runs one more Socket Mode connection until ctx ends, handing its events over
// like the first's; its end is reported on errc (only the first reports readiness).
func (c *Channel) runMoreSocket(ctx context.Context, sock *socketmode.Client, errc chan<- error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sock.RunContext(sctx) }()
	for {
		select {
		case err := <-done:
			errc <- err
			return
		case evt := <-sock.Events:
			c.socketEvent(sctx, sock, evt)
		}
	}
}

// socketEvent handles one event of the connection sock; acknowledgements go back on sock.
func (c *Channel) socketEvent(ctx context.Context, sock *socketmode.Client, evt socketmode.Event) {
	primary := sock == c.sock
	// Once ctx has ended the websocket is closed on purpose: the read and connect errors that
	// follow ("use of closed network connection", "context canceled") are the shutdown, not
	// a fault.
	warn := c.log.Warn
	if ctx.Err() != nil {
		warn = c.log.Debug
	}
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		if primary {
			c.setReady(false, "connecting")
		}
	case socketmode.EventTypeConnectionError:
		detail := "reconnecting"
		if ce, ok := evt.Data.(*slack.ConnectionErrorEvent); ok && ce.ErrorObj != nil {
			detail = "reconnecting: " + ce.ErrorObj.Error()
			warn("slack socket mode connection failed", "error", ce.ErrorObj, "attempt", ce.Attempt, "retry_in", ce.Backoff)
		}
		if primary {
			c.setReady(false, detail)
		}
	case socketmode.EventTypeInvalidAuth:
		c.setReady(false, "app token rejected")
	case socketmode.EventTypeConnected:
		c.log.Debug("slack socket mode websocket open")
	case socketmode.EventTypeHello:
		c.gate.connected()
		if primary {
			c.setReady(true, "connected (socket mode)")
		}
	case socketmode.EventTypeIncomingError:
		if ie, ok := evt.Data.(*slack.IncomingEventError); ok {
			warn("slack socket mode read error", "error", ie.ErrorObj)
		}
	case socketmode.EventTypeErrorWriteFailed:
		if we, ok := evt.Data.(*socketmode.ErrorWriteFailed); ok {
			warn("slack socket mode ack not written; Slack will redeliver", "error", we.Cause)
		}
	case socketmode.EventTypeErrorBadMessage:
		c.socketBadMessage(ctx, sock, evt)
	case socketmode.EventTypeEventsAPI:
		c.socketEventsAPI(ctx, sock, evt)
	case socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		c.socketInteraction(ctx, sock, evt)
	}
}

// socketBadMessage acks a message slack-go could not parse: usually an event type the app did
// not ask for, which Slack would otherwise redeliver forever.
func (c *Channel) socketBadMessage(ctx context.Context, sock *socketmode.Client, evt socketmode.Event) {
	if bm, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
		var env struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(bm.Message, &env) == nil && env.EnvelopeID != "" {
			c.ack(ctx, sock, env.EnvelopeID)
		}
		c.log.Debug("slack socket mode message ignored", "error", bm.Cause)
	}
}

// socketEventsAPI queues an Events API envelope for the worker, which acks it once the pipeline
// has the event durably; one that is not the gateway's is acked at once.
func (c *Channel) socketEventsAPI(ctx context.Context, sock *socketmode.Client, evt socketmode.Event) {
	if evt.Request == nil {
		return
	}
	ea, ok := evt.Data.(slackevents.EventsAPIEvent)
	if !ok {
		c.ack(ctx, sock, evt.Request.EnvelopeID)
		return
	}
	j, ok := jobFrom(ea, "socket")
	if !ok {
		c.ack(ctx, sock, evt.Request.EnvelopeID)
		return
	}
	j.retry = evt.Request.RetryAttempt
	env := evt.Request.EnvelopeID
	j.ack = func() { c.ack(ctx, sock, env) }
	c.enqueue(j) // acknowledged by the worker once the pipeline has the event durably
}

// socketInteraction queues a button press or slash command for the worker.
func (c *Channel) socketInteraction(ctx context.Context, sock *socketmode.Client, evt socketmode.Event) {
	if evt.Request == nil {
		return
	}
	// Acknowledged by the worker once the sink took the event (the pipeline records a
	// decision before it returns), as Events API envelopes are: Slack does not redeliver
	// interactions, so an acknowledged press or command the process then lost would be
	// gone without a word. One not taken (queue full, or refused by the sink) stays
	// unacknowledged, and Slack shows the user that it failed. Taking an event is quick (a queue and a durable write), well within the 3 s
	// Slack allows; a later ack is logged.
	env := evt.Request.EnvelopeID
	var j job
	var ok bool
	switch d := evt.Data.(type) {
	case slack.InteractionCallback:
		j, ok = interactionJob(d, "socket")
	case slack.SlashCommand:
		j, ok = c.commandJob(d, "socket")
	}
	if !ok {
		c.ack(ctx, sock, env) // not the gateway's: nothing to take
		return
	}
	j.ack = c.interactionAck(ctx, sock, env, c.cfg.Clock.Now())
	if !c.enqueue(j) {
		c.log.Warn("slack interaction not taken: event queue full; left unacknowledged (Slack tells the user)", "envelope_id", env)
	}
}

// interactionAckWindow is how soon Slack wants an interactive envelope acknowledged.
const interactionAckWindow = 3 * time.Second

// interactionAck acknowledges an interactive envelope received at since, logging when that is
// later than Slack's window (Slack has then shown the user an error, though the event was
// taken).
func (c *Channel) interactionAck(ctx context.Context, sock *socketmode.Client, env string, since time.Time) func() {
	return func() {
		if d := c.cfg.Clock.Now().Sub(since); d > interactionAckWindow {
			c.log.Warn("slack interaction acknowledged after Slack's 3 s window", "envelope_id", env, "after", d)
		}
		c.ack(ctx, sock, env)
	}
}

func (c *Channel) ack(ctx context.Context, sock *socketmode.Client, envelopeID string) {
	if err := sock.AckCtx(ctx, envelopeID, nil); err != nil && ctx.Err() == nil {
		c.log.Warn("slack socket mode ack failed", "error", err)
	}
}

// jobFrom extracts the parts of an Events API callback the workers need. ok is false for events
// the channel does not handle (they are still acknowledged).
func jobFrom(ea slackevents.EventsAPIEvent, transport string) (job, bool) {
	if ea.Type != slackevents.CallbackEvent {
		return job{}, false
	}
	cb, ok := ea.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		return job{}, false
	}
	switch ea.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent, *slackevents.MessageEvent, *slackevents.ReactionAddedEvent, *slackevents.AssistantThreadStartedEvent,
		*slackevents.AgentSessionStoppedEvent:
	case *slackevents.AppHomeOpenedEvent: // answered in apphome.go
	default:
		return job{}, false
	}
	return job{eventID: cb.EventID, teamID: ea.TeamID, inner: ea.InnerEvent.Data, transport: transport}, true
}

// connectGate spaces Socket Mode (re)connects: the first connect and a reconnect after a
// connection that stayed up a while wait only a little jitter; reconnects after short-lived
// connections back off exponentially (to 30s) with jitter. It wraps the HTTP client that
// calls apps.connections.open.
type connectGate struct {
	clock Clock
	base  *http.Client

	mu          sync.Mutex
	opens       int       // apps.connections.open calls since the last stable connection
	connectedAt time.Time // last hello
}

const (
	stableConnection = time.Minute
	maxReconnectWait = 30 * time.Second
)

func newConnectGate(clock Clock, base *http.Client) *connectGate {
	return &connectGate{clock: clock, base: base}
}

func (g *connectGate) client() *http.Client {
	cl := *g.base
	rt := cl.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	cl.Transport = gateTransport{g: g, next: rt}
	return &cl
}

func (g *connectGate) connected() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.connectedAt = g.clock.Now()
	g.mu.Unlock()
}

// delay returns how long to wait before the next apps.connections.open.
func (g *connectGate) delay() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	if !g.connectedAt.IsZero() && now.Sub(g.connectedAt) >= stableConnection {
		g.opens = 0
	}
	g.connectedAt = time.Time{}
	n := g.opens
	g.opens++
	switch n {
	case 0:
		return 0
	case 1:
		return retry.Random(time.Second)
	}
	// 2s, 4s, … capped at 30s, with equal jitter.
	return retry.Policy{Initial: 2 * time.Second, Max: maxReconnectWait}.Delay(n - 1)
}

type gateTransport struct {
	g    *connectGate
	next http.RoundTripper
}

func (t gateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/apps.connections.open") {
		if d := t.g.delay(); d > 0 {
			select {
			case <-req.Context().Done():
				if req.Body != nil {
					_ = req.Body.Close()
				}
				return nil, req.Context().Err()
			case <-t.g.clock.After(d):
			}
		}
	}
	return t.next.RoundTrip(req)
}
