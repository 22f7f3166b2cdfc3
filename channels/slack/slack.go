// Package slack connects echogate to a Slack workspace.
//
// One Channel serves one bot token. It receives events over Socket Mode (when an app-level token
// is configured) and/or the HTTP Events API (EventsHandler, when a signing secret is configured),
// normalizes them into echogate.InboundEvent values, and posts replies, streams, approval prompts,
// reactions and progress indicators through the Web API with github.com/slack-go/slack.
//
// Delivery guarantees:
//   - Events are acknowledged before any work; then they queue (bounded, per channel in order)
//     for the sink. A full queue is not acknowledged, so Slack redelivers later.
//   - InboundEvent.ID is "<channel>:<ts>" for posts (so the message and app_mention events of one
//     post, and every Slack retry of them, share it) and the Slack event_id for reactions. A
//     small in-memory set drops quick redeliveries; the dispatcher's persistent dedupe is the
//     source of truth.
//   - chat.postMessage is never re-sent blindly: each post carries a unique reply id in its
//     metadata, and after an ambiguous failure the thread is searched for it before a retry.
//   - Each Slack channel has its own outbound budget (finals first); 429 Retry-After is honoured
//     for that channel only; ok:false is an error, logged with the method and code.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	retry "github.com/echogate/echogate/internal/backoff"
	"github.com/echogate/echogate/internal/netguard"
)

// Interface checks: the capabilities the pipeline finds by type assertion.
var (
	_ channels.Channel  = (*Channel)(nil)
	_ channels.Streamer = (*Channel)(nil)
	_ channels.Editor   = (*Channel)(nil)
	_ channels.Reactor  = (*Channel)(nil)
	_ channels.Typer    = (*Channel)(nil)
	_ channels.Health   = (*Channel)(nil)

	_ channels.ActivityShower = (*Channel)(nil)
)

const numShards = 4

// Channel is the Slack adapter. Create it with New, start it with Run; Send, StartStream, Edit,
// React, Unreact and StartTyping may be called concurrently at any time.
type Channel struct {
	cfg  Config
	log  *slog.Logger
	api  *slack.Client
	sock *socketmode.Client // nil without an app token
	// moreSocks are the Socket Mode connections past the first (Config.SocketConnections);
	// the first alone reports readiness.
	moreSocks []*socketmode.Client
	gate      *connectGate // nil without an app token
	budgets   *budgets

	sent    *lru[string, echogate.ConversationRef] // "C:ts" of our posts → their session
	authors *lru[string, string]                   // "C:ts" of inbound posts → author (stream recipient)
	threads *lru[string, bool]                     // "C:thread_ts" → whether the bot is in the thread
	recent  *lru[string, struct{}]                 // recently accepted event ids and post ids
	names   *lru[string, string]                   // user id → display name (users.info)
	// lastThread: "C:user" → the thread of the user's last post to the bot in that channel,
	// where their slash commands act.
	lastThread *lru[string, string]
	titled     *lru[string, struct{}]  // agent threads already titled
	welcomed   *lru[string, struct{}]  // users welcomed on the messages tab (apphome.go)
	homed      *lru[string, struct{}]  // users whose home view is published (apphome.go)
	nameq      chan string             // users whose display name to resolve (names.go)
	pending    sync.Map                // users in nameq, each queued once at a time
	nameMiss   *lru[string, time.Time] // users users.info did not name → when to ask again
	reads      *threadReader           // conversations.replies budget for thread context
	inflight   inflightAcks            // redeliveries waiting for their first copy

	shards  [numShards]chan job
	running atomic.Bool
	files   netguard.LazyDownloader // attachment downloads (download.go)

	nativeOff atomic.Bool // chat.startStream is not available in this workspace
	statusOff atomic.Bool // assistant.threads.setStatus is not available in this workspace
	agentOff  atomic.Bool // agents.sessions.setStatus is not available in this workspace
	acts      sync.Map    // "C:thread" → *threadActivity of the turn running there (tasks.go)
	dms       dmCache     // user → the bot's DM channel with them (dm.go)

	mu          sync.Mutex
	self        identity
	ready       bool
	readyDetail string
}

type identity struct {
	UserID, BotID, TeamID string
}

// job is one acknowledged event waiting for the sink.
type job struct {
	eventID   string
	teamID    string
	retry     int
	inner     any // *slackevents.AppMentionEvent, *slackevents.MessageEvent, *slackevents.ReactionAddedEvent
	transport string
	// ack acknowledges a Socket Mode envelope once the pipeline took the event durably (or it
	// is not a turn); nil for the HTTP Events API, which answers when the event is queued.
	ack func()
	// wait connects an HTTP interactivity request to this job (events_interaction.go); nil
	// otherwise.
	wait *interactionWait
}

// New validates cfg and builds the channel. It does no I/O. log may be nil (logs are dropped).
func New(cfg Config, log *slog.Logger) (*Channel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("channel", echogate.PlatformSlack)
	c := &Channel{
		cfg:         cfg,
		log:         log,
		api:         slack.New(cfg.BotToken, slack.OptionAPIURL(cfg.APIURL), slack.OptionHTTPClient(cfg.HTTPClient)),
		budgets:     newBudgets(cfg.Clock, cfg.ChannelRate, cfg.ChannelBurst),
		sent:        newLRU[string, echogate.ConversationRef](4096),
		authors:     newLRU[string, string](4096),
		threads:     newLRU[string, bool](4096),
		recent:      newLRU[string, struct{}](8192),
		names:       newLRU[string, string](4096),
		lastThread:  newLRU[string, string](4096),
		titled:      newLRU[string, struct{}](4096),
		welcomed:    newLRU[string, struct{}](maxHomeUsers),
		homed:       newLRU[string, struct{}](maxHomeUsers),
		nameq:       make(chan string, nameQueue),
		nameMiss:    newLRU[string, time.Time](4096),
		reads:       newThreadReader(cfg.ThreadReadsPerMinute),
		readyDetail: "not started",
	}
	for i := range c.shards {
		c.shards[i] = make(chan job, max(1, cfg.QueueSize/numShards))
	}
	if cfg.DisableNativeStreaming {
		c.nativeOff.Store(true)
	}
	if cfg.AppToken != "" {
		c.gate = newConnectGate(cfg.Clock, cfg.HTTPClient)
		sockAPI := slack.New(cfg.BotToken,
			slack.OptionAPIURL(cfg.APIURL),
			slack.OptionAppLevelToken(cfg.AppToken),
			slack.OptionHTTPClient(c.gate.client()),
		)
		c.sock = socketmode.New(sockAPI)
		for range cfg.SocketConnections - 1 {
			c.moreSocks = append(c.moreSocks, socketmode.New(sockAPI))
		}
	}
	return c, nil
}

// Name returns echogate.PlatformSlack.
func (c *Channel) Name() string { return echogate.PlatformSlack }

// Ready reports whether the channel can receive events: Socket Mode connected (when configured),
// or Run started and the bot token checked (Events API only).
func (c *Channel) Ready() (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready, c.readyDetail
}

func (c *Channel) setReady(ok bool, detail string) {
	c.mu.Lock()
	changed := c.ready != ok
	c.ready, c.readyDetail = ok, detail
	c.mu.Unlock()
	if changed {
		c.log.Info("slack readiness changed", "ready", ok, "detail", detail)
	}
}

func (c *Channel) identity() identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.self
}

// Run checks the bot token (auth.test), then receives events until ctx ends: over Socket Mode
// when an app token is configured (reconnecting with backoff and jitter), and from EventsHandler
// in any case. It returns nil when ctx ends, or an error for a permanent failure (a revoked or
// invalid token). Run returns only after its goroutines have exited; events still queued then
// are dropped (they were acknowledged; the dispatcher's dedupe makes a later redelivery safe).
func (c *Channel) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("slack: run: nil sink")
	}
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("slack: run: already running")
	}
	defer c.running.Store(false)
	defer c.setReady(false, "stopped")

	c.setReady(false, "checking bot token")
	if err := c.authenticate(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range c.shards {
		q := c.shards[i]
		wg.Go(func() { c.worker(wctx, q, sink) })
	}
	wg.Go(func() { c.nameWorker(wctx) })
	var err error
	if c.sock != nil {
		err = c.runSocket(ctx)
	} else {
		c.setReady(true, "events api: waiting for POST /slack/events")
		<-ctx.Done()
	}
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// permanentAuthErrors are auth.test / apps.connections.open codes that retrying cannot fix.
var permanentAuthErrors = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "no_permission": true, "missing_scope": true, "not_allowed_token_type": true,
}

// authenticate learns the bot's own ids with auth.test, retrying transient failures.
func (c *Channel) authenticate(ctx context.Context) error {
	bo := backoff{initial: 500 * time.Millisecond, max: 30 * time.Second}
	for {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		resp, err := c.api.AuthTestContext(cctx)
		cancel()
		if err == nil {
			c.mu.Lock()
			c.self = identity{UserID: resp.UserID, BotID: resp.BotID, TeamID: resp.TeamID}
			c.mu.Unlock()
			c.log.Info("slack bot authenticated", "bot_user", resp.UserID, "team", resp.TeamID)
			return nil
		}
		var se slack.SlackErrorResponse
		if errors.As(err, &se) && permanentAuthErrors[se.Err] {
			c.setReady(false, "bot token rejected: "+se.Err)
			return fmt.Errorf("slack: auth.test: bot token rejected (%s): check SLACK_BOT_TOKEN and reinstall the app: %w", se.Err, &APIError{Method: "auth.test", Code: se.Err})
		}
		wait := bo.next()
		if ra, ok := retryAfterOf(err); ok {
			wait = max(wait, ra)
		}
		c.setReady(false, "auth.test failed, retrying: "+err.Error())
		c.log.Warn("slack auth.test failed, retrying", "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.cfg.Clock.After(wait):
		}
	}
}

// worker hands queued events of its shard to the sink, in order.
func (c *Channel) worker(ctx context.Context, q <-chan job, sink channels.Sink) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-q:
			c.handleRecovered(ctx, j, sink)
		}
	}
}

// enqueue queues an event; false means the queue is full or Run is not running, and the event
// must not be acknowledged (so Slack redelivers). A Socket Mode event (j.ack set) is
// acknowledged by its worker once the pipeline has it (see handle), never before.
func (c *Channel) enqueue(j job) bool {
	if !c.running.Load() {
		return false
	}
	if j.eventID != "" {
		if _, dup := c.recent.Get("e:" + j.eventID); dup {
			c.log.Debug("slack duplicate delivery dropped", "event_id", j.eventID, "retry", j.retry)
			if j.ack != nil {
				c.ackWith(j.eventID, j.ack) // now if handled already, else with the copy in flight
			}
			return true
		}
	}
	q := c.shards[shardOf(channelOf(j.inner))]
	tracked := j.eventID != "" && j.ack != nil
	if tracked {
		c.inflight.queued(j.eventID) // before the worker can see it
	}
	select {
	case q <- j:
		if j.eventID != "" {
			c.recent.Add("e:"+j.eventID, struct{}{})
		}
		return true
	default:
		if tracked {
			c.handled(j.eventID, false)
		}
		c.log.Warn("slack event queue full; leaving the event unacknowledged for Slack to redeliver", "event_id", j.eventID)
		return false
	}
}

// inflightAcks holds the acknowledgements of redeliveries that arrived while their event's
// first copy was still queued: they are sent when that copy is (see handle).
type inflightAcks struct {
	mu      sync.Mutex
	pending map[string][]func() // event id → acks waiting; an entry exists while the copy is queued
}

// queued notes that the first copy of eventID is in flight.
func (a *inflightAcks) queued(eventID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending = map[string][]func(){}
	}
	if _, ok := a.pending[eventID]; !ok {
		a.pending[eventID] = nil
	}
}

// ackWith sends ack now when eventID's first copy was handled, else when it is.
func (c *Channel) ackWith(eventID string, ack func()) {
	c.inflight.mu.Lock()
	waiting, inFlight := c.inflight.pending[eventID]
	if inFlight {
		c.inflight.pending[eventID] = append(waiting, ack)
	}
	c.inflight.mu.Unlock()
	if !inFlight {
		ack()
	}
}

// handled ends eventID's first copy: the acknowledgements waiting for it are sent when it was
// taken (ok), dropped otherwise (Slack redelivers).
func (c *Channel) handled(eventID string, ok bool) {
	c.inflight.mu.Lock()
	waiting := c.inflight.pending[eventID]
	delete(c.inflight.pending, eventID)
	c.inflight.mu.Unlock()
	for _, ack := range waiting {
		if ok {
			ack()
		}
	}
}

func shardOf(ch string) int {
	h := uint32(2166136261)
	for i := 0; i < len(ch); i++ {
		h ^= uint32(ch[i])
		h *= 16777619
	}
	return int(h % numShards)
}

// backoff counts one loop's retries: next is the wait before the next one, initial·2^n capped
// at max with equal jitter in [d/2, d] (internal/backoff).
type backoff struct {
	initial, max time.Duration
	n            int
}

func (b *backoff) next() time.Duration {
	b.n++
	return retry.Policy{Initial: b.initial, Max: b.max}.Delay(b.n)
}

func (b *backoff) reset() { b.n = 0 }
