// Package discord connects the gateway to Discord through a bot user, on
// github.com/bwmarrin/discordgo.
//
// Inbound, it keeps one gateway websocket (optionally one shard of it) connected with explicit
// intents (DIRECT_MESSAGES, DIRECT_MESSAGE_REACTIONS, GUILD_MESSAGES, GUILD_MESSAGE_REACTIONS,
// MESSAGE_CONTENT), turns DMs, guild messages addressed to the bot and reactions on the bot's own
// messages into echogate.InboundEvent values and hands them to the sink. Outbound, it posts,
// streams (post early, edit at most once per EditInterval, split at 2000 characters), edits,
// reacts and shows the typing indicator, within a per-channel budget on top of discordgo's
// per-route rate limiter.
//
// Connection ownership: discordgo's own reconnect loop is switched off
// (ShouldReconnectOnError=false). Run owns reconnection: after a drop it calls Session.Open again
// with exponential backoff and jitter; discordgo keeps the session id and sequence number across
// Close/Open, so the new connection sends Resume and Discord replays what was missed (replays
// carry the original message ids, which the dispatcher dedupes). A run of short-lived
// connections opens a circuit breaker (internal/breaker, on Config.Clock) that pauses
// reconnecting for a cool-down.
// A connection whose heartbeats stopped being acknowledged is reported not ready and replaced.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/internal/breaker"
	"github.com/echogate/echogate/internal/netguard"
)

// Intents is the full set of gateway intents the channel may identify with: the base intents
// and, with Config.MessageContent, the privileged MESSAGE_CONTENT, which must then be enabled in
// the Developer Portal (Bot → Privileged Gateway Intents), otherwise the gateway closes with
// 4014 and Run returns ErrDisallowedIntents.
const Intents = baseIntents | discordgo.IntentsMessageContent

// IntentsFor returns the intents a channel with cfg identifies with.
func IntentsFor(cfg Config) discordgo.Intent { return cfg.intents() }

var (
	_ channels.Channel  = (*Channel)(nil)
	_ channels.Streamer = (*Channel)(nil)
	_ channels.Editor   = (*Channel)(nil)
	_ channels.Reactor  = (*Channel)(nil)
	_ channels.Typer    = (*Channel)(nil)
	_ channels.Health   = (*Channel)(nil)

	_ channels.ActivityShower = (*Channel)(nil)
)

// Channel is the Discord adapter. Create it with New, start it with Run. Send, StartStream, Edit,
// React and Unreact use only REST and work whether or not Run is active.
type Channel struct {
	cfg    Config
	log    *slog.Logger
	clock  Clock
	sess   *discordgo.Session
	budget *budget
	posted *idSet // ids of messages this process posted (to recognise reactions on them)

	breaker *breaker.Breaker
	conns   connTracker

	running atomic.Bool
	sink    atomic.Pointer[channels.Sink]
	runCtx  atomic.Pointer[context.Context]
	botID   atomic.Pointer[string]
	botName atomic.Pointer[string] // the bot user's name (READY), for readiness
	// life ends when Run returns: it stops typing refreshers and stream flushers.
	life     context.Context
	stopLife context.CancelFunc
	goMu     sync.Mutex // guards closed and wg.Add against Run's final wg.Wait
	closed   bool
	wg       sync.WaitGroup

	files        netguard.LazyDownloader // attachment downloads (download.go)
	disconnected chan struct{}           // a Disconnect event happened (buffered 1)
	fetchSem     chan struct{}           // bounds concurrent message look-ups for reactions
	commandsOnce atomic.Bool             // application commands registered (or being registered)
	threadKinds  *kindCache              // channel id → whether it is a thread (thread.go)
	threadsSeen  *idSet                  // threads whose history was read for context
	lanes        lanes                   // messages waiting for thread reads, per channel (lanes.go)
	activity     sync.Map                // channel id → *activityState (activity.go)
	dms          dmCache                 // user id → the bot's DM channel with them (dm.go)

	mu    sync.Mutex
	state connState
}

// connState is what Ready reports.
type connState struct {
	connected   bool
	detail      string
	connectedAt time.Time
	ackValue    time.Time     // discordgo's LastHeartbeatAck when last observed
	ackSeenAt   time.Time     // our clock when ackValue last changed
	ackChanges  int           // how often ackValue changed on this connection
	ackGap      time.Duration // largest gap between consecutive ACKs on this connection
}

// New validates cfg and builds the channel. It does no I/O.
func New(cfg Config, log *slog.Logger) (*Channel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("channel", echogate.PlatformDiscord)

	base := http.DefaultTransport
	client := &http.Client{Timeout: cfg.RequestTimeout}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		client = &c
		if c.Transport != nil {
			base = c.Transport
		}
	}
	rt, err := newRewriteTransport(base, cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("discord: config: api_url: %w", err)
	}
	client.Transport = rt

	sess, err := discordgo.New(cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: new session: %w", err)
	}
	sess.Client = client
	sess.ShouldReconnectOnError = false
	sess.ShouldReconnectVoiceOnSessionError = false
	sess.ShouldRetryOnRateLimit = false // Channel.call retries 429s itself, honouring ctx
	sess.StateEnabled = false
	sess.SyncEvents = true // handlers run in order on the gateway reader; they only hand off
	sess.LogLevel = -1     // discordgo logs through the standard logger; Channel logs with slog
	sess.ShardID = cfg.ShardID
	sess.ShardCount = cfg.ShardCount
	sess.Identify.Intents = cfg.intents()
	sess.Identify.Shard = &[2]int{cfg.ShardID, cfg.ShardCount}
	sess.Identify.Properties.Browser = "echogate"
	sess.Identify.Properties.Device = "echogate"
	sess.UserAgent = "DiscordBot (https://github.com/echogate/echogate, 1) discordgo/" + discordgo.VERSION

	c := &Channel{
		cfg:          cfg,
		log:          log,
		clock:        cfg.Clock,
		sess:         sess,
		budget:       newBudget(cfg.Clock, cfg.ChannelBurst, cfg.ChannelRefill),
		posted:       newIDSet(8192),
		disconnected: make(chan struct{}, 1),
		fetchSem:     make(chan struct{}, 4),
		threadKinds:  newKindCache(4096),
		threadsSeen:  newIDSet(4096),
	}
	c.conns.timeout = cfg.OpenTimeout
	sess.Dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: cfg.OpenTimeout,
		NetDialContext:   c.conns.dial,
	}
	c.life, c.stopLife = context.WithCancel(context.Background())
	c.breaker = breaker.New(breaker.Settings{
		Name:     "discord-gateway",
		Failures: cfg.BreakerFailures,
		Window:   cfg.BreakerWindow,
		CoolDown: cfg.BreakerCooldown,
		Now:      cfg.Clock.Now,
		OnState: func(_ string, from, to breaker.State) {
			log.Warn("discord: reconnect breaker changed state", "from", from.String(), "to", to.String())
		},
	})
	c.state.detail = "not started"

	sess.AddHandler(c.onReady)
	sess.AddHandler(c.onDisconnect)
	sess.AddHandler(c.onMessageCreate)
	sess.AddHandler(c.onRawEvent)
	sess.AddHandler(c.onInteraction)
	return c, nil
}

// Name returns echogate.PlatformDiscord.
func (c *Channel) Name() string { return echogate.PlatformDiscord }

// BotID returns the bot's user id once the gateway sent READY, else "".
func (c *Channel) BotID() string {
	if p := c.botID.Load(); p != nil {
		return *p
	}
	return ""
}

// Ready reports whether the gateway connection is up and healthy: connected, and heartbeat ACKs
// arriving (a connection without ACKs for two heartbeat intervals is a zombie and reports false).
// It never blocks.
func (c *Channel) Ready() (bool, string) {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	if !st.connected {
		return false, st.detail
	}
	now := c.clock.Now()
	if silent, limit := now.Sub(st.ackSeenAt), c.ackLimit(st); silent > limit {
		return false, fmt.Sprintf("zombie connection: no heartbeat ACK for %s (limit %s)", silent.Round(time.Millisecond), limit)
	}
	return true, st.detail
}

// ackLimit is how long a connection may go without a heartbeat ACK: two measured heartbeat
// intervals (plus one health check period) once measured, else Config.HeartbeatTimeout.
func (c *Channel) ackLimit(st connState) time.Duration {
	if st.ackChanges >= 2 && st.ackGap > 0 {
		return 2*st.ackGap + c.cfg.HealthInterval
	}
	return c.cfg.HeartbeatTimeout
}

func (c *Channel) setDown(detail string) {
	c.mu.Lock()
	c.state.connected = false
	c.state.detail = detail
	c.mu.Unlock()
}

// Run connects to the gateway and delivers events to sink until ctx ends; it reconnects (and
// resumes) after drops. It returns nil when ctx ends, or an error wrapping ErrUnauthorized,
// ErrDisallowedIntents, ErrSharding or ErrGatewayRejected when Discord refuses the bot for good.
// Run returns only after its goroutines (typing refreshers, stream flushers, look-ups) exited.
func (c *Channel) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return fmt.Errorf("discord: run: %w", ErrNilSink)
	}
	if !c.running.CompareAndSwap(false, true) {
		return fmt.Errorf("discord: run: %w (Run may be called once per Channel)", ErrAlreadyRunning)
	}
	c.sink.Store(&sink)
	c.runCtx.Store(&ctx)
	defer func() {
		c.sink.Store(nil)
		c.goMu.Lock()
		c.closed = true
		c.goMu.Unlock()
		c.stopLife()
		c.wg.Wait()
	}()

	if err := c.preflight(ctx); err != nil {
		if ctx.Err() != nil {
			c.setDown("stopped")
			return nil
		}
		c.setDown(err.Error())
		return err
	}
	failures := 0
	var lastErr error
	for {
		if ctx.Err() != nil {
			c.setDown("stopped")
			return nil
		}
		done, err := c.breaker.Allow()
		if err != nil {
			if !c.waitBreaker(ctx, lastErr) {
				c.setDown("stopped")
				return nil
			}
			continue
		}
		// Drop a Disconnect signal of the previous connection: the new one is not open yet.
		select {
		case <-c.disconnected:
		default:
		}
		err = c.open(ctx)
		switch {
		case err == nil, errors.Is(err, discordgo.ErrWSAlreadyOpen):
		case ctx.Err() != nil:
			done(nil)
			c.setDown("stopped")
			return nil
		default:
			if perm := permanent(err); perm != nil {
				done(err)
				c.setDown(perm.Error())
				c.log.Error("discord: gateway refused the bot; not retrying", "err", perm, "shard", c.cfg.ShardID)
				return perm
			}
			done(err)
			failures++
			lastErr = err
			wait := backoffDelay(failures, c.cfg.BackoffInitial, c.cfg.BackoffMax, c.cfg.Jitter)
			c.setDown(fmt.Sprintf("reconnecting (attempt %d failed: %v); next attempt in %s", failures, err, wait.Round(time.Millisecond)))
			c.log.Warn("discord: gateway connection failed", "err", err, "attempt", failures, "retry_in", wait, "shard", c.cfg.ShardID)
			if !c.sleep(ctx, wait) {
				c.setDown("stopped")
				return nil
			}
			continue
		}
		c.markConnected()
		stable := c.watch(ctx, done)
		if ctx.Err() != nil {
			c.setDown("stopped")
			if err := c.sess.Close(); err != nil {
				c.log.Debug("discord: close gateway", "err", err)
			}
			return nil
		}
		if stable {
			failures = 0
		} else {
			failures++
			lastErr = errors.New("connection dropped before it was stable")
		}
		wait := backoffDelay(failures, c.cfg.BackoffInitial, c.cfg.BackoffMax, c.cfg.Jitter)
		c.setDown(fmt.Sprintf("reconnecting: gateway connection lost; next attempt in %s", wait.Round(time.Millisecond)))
		lvl := slog.LevelWarn
		if stable {
			lvl = slog.LevelInfo // routine: Discord asks for reconnects (op 7) regularly
		}
		c.log.Log(ctx, lvl, "discord: gateway connection lost; reconnecting", "retry_in", wait, "stable", stable, "shard", c.cfg.ShardID)
		if !c.sleep(ctx, wait) {
			c.setDown("stopped")
			return nil
		}
	}
}

// waitBreaker reports the open reconnect breaker (with lastErr, the last connection failure)
// and waits out its cool-down; false when ctx ended first.
func (c *Channel) waitBreaker(ctx context.Context, lastErr error) bool {
	detail := fmt.Sprintf("reconnect breaker open after %d connection failures within %s; next attempt after the %s cool-down", c.cfg.BreakerFailures, c.cfg.BreakerWindow, c.cfg.BreakerCooldown)
	if lastErr != nil {
		detail += " (last error: " + lastErr.Error() + ")"
	}
	c.setDown(detail)
	c.log.Error("discord: "+detail, "shard", c.cfg.ShardID)
	return c.sleep(ctx, c.cfg.BreakerCooldown+c.cfg.Jitter(c.cfg.BackoffInitial))
}

// watch waits while the connection is up: it reports the connection to the breaker once it has
// been stable for StableAfter (or as a failure if it drops before), checks heartbeat ACKs every
// HealthInterval and replaces a zombie connection. It returns when the connection dropped (or
// ctx ended), reporting whether the connection had become stable.
func (c *Channel) watch(ctx context.Context, done func(error)) (stable bool) {
	stableC := c.clock.After(c.cfg.StableAfter)
	tick := c.clock.After(c.cfg.HealthInterval)
	defer func() {
		if !stable {
			done(errors.New("connection dropped before it was stable"))
		}
	}()
	for {
		select {
		case <-ctx.Done():
			if !stable {
				done(nil) // shutting down is not a failure
				stable = true
			}
			return stable
		case <-stableC:
			stable = true
			done(nil)
		case <-c.disconnected:
			if c.stillConnected() {
				continue // a late signal of an earlier connection
			}
			return stable
		case <-tick:
			tick = c.clock.After(c.cfg.HealthInterval)
			if ok, detail := c.checkHeartbeat(); !ok {
				c.log.Warn("discord: replacing zombie gateway connection", "detail", detail, "shard", c.cfg.ShardID)
				c.setDown(detail)
				// Any close code but 1000/1001 keeps the session resumable.
				if err := c.sess.CloseWithCode(websocket.CloseServiceRestart); err != nil {
					c.log.Debug("discord: close zombie connection", "err", err)
				}
				return stable
			}
		}
	}
}

// stillConnected reports whether the gateway connection dialed last is still open: a Disconnect
// signal seen while it is came from an earlier connection (discordgo's reader and heartbeat
// goroutines may each close the old one). discordgo's DataReady cannot tell: the old
// connection's heartbeat goroutine sets it again when its write finished just before Close
// took the session lock, so a dead connection looked alive and was never replaced.
func (c *Channel) stillConnected() bool { return c.conns.latestOpen() }

// markConnected records a fresh connection.
func (c *Channel) markConnected() {
	c.sess.RLock()
	ack := c.sess.LastHeartbeatAck
	c.sess.RUnlock()
	now := c.clock.Now()
	detail := fmt.Sprintf("connected (shard %d/%d)", c.cfg.ShardID, c.cfg.ShardCount)
	if name := c.botName.Load(); name != nil && *name != "" {
		detail = fmt.Sprintf("connected as %s (shard %d/%d)", *name, c.cfg.ShardID, c.cfg.ShardCount)
	}
	c.mu.Lock()
	c.state = connState{connected: true, detail: detail, connectedAt: now, ackValue: ack, ackSeenAt: now}
	c.mu.Unlock()
	c.log.Info("discord: gateway connected", "shard", c.cfg.ShardID, "shard_count", c.cfg.ShardCount)
}

// checkHeartbeat observes discordgo's last heartbeat ACK, measures the heartbeat interval from the
// gaps between ACKs and reports whether the connection is still alive.
func (c *Channel) checkHeartbeat() (bool, string) {
	c.sess.RLock()
	ack := c.sess.LastHeartbeatAck
	c.sess.RUnlock()
	now := c.clock.Now()
	c.mu.Lock()
	if !ack.Equal(c.state.ackValue) {
		if gap := ack.Sub(c.state.ackValue); gap > c.state.ackGap {
			c.state.ackGap = gap
		}
		c.state.ackValue = ack
		c.state.ackSeenAt = now
		c.state.ackChanges++
	}
	st := c.state
	c.mu.Unlock()
	if silent, limit := now.Sub(st.ackSeenAt), c.ackLimit(st); silent > limit {
		return false, fmt.Sprintf("zombie connection: no heartbeat ACK for %s (limit %s); reconnecting", silent.Round(time.Millisecond), limit)
	}
	return true, ""
}

// sleep waits d on the clock; it reports false when ctx ended first.
func (c *Channel) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-c.clock.After(d):
		return true
	}
}

// preflight checks the token and the session start limit with GET /gateway/bot, retrying
// transient failures with backoff until ctx ends. A rejected token is permanent.
func (c *Channel) preflight(ctx context.Context) error {
	c.setDown("connecting: checking the bot token")
	for attempt := 1; ; attempt++ {
		var gb *discordgo.GatewayBotResponse
		err := c.call(ctx, "get gateway", true, func(opts ...discordgo.RequestOption) error {
			var err error
			gb, err = c.sess.GatewayBot(opts...)
			return err
		})
		if err == nil {
			if gb.Shards > c.cfg.ShardCount {
				c.log.Warn("discord: Discord recommends more shards than configured", "recommended", gb.Shards, "shard_count", c.cfg.ShardCount)
			}
			lim := gb.SessionStartLimit
			if lim.Total > 0 && lim.Remaining == 0 {
				wait := time.Duration(lim.ResetAfter) * time.Millisecond
				c.setDown(fmt.Sprintf("waiting %s for Discord's daily session start limit (%d) to reset", wait, lim.Total))
				c.log.Warn("discord: session start limit exhausted; waiting", "wait", wait)
				if !c.sleep(ctx, wait) {
					return ctx.Err()
				}
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrUnauthorized) {
			return err
		}
		wait := backoffDelay(attempt, c.cfg.BackoffInitial, c.cfg.BackoffMax, c.cfg.Jitter)
		c.setDown(fmt.Sprintf("cannot reach the Discord API at %s: %v; retrying in %s", c.cfg.APIURL, err, wait.Round(time.Millisecond)))
		c.log.Warn("discord: gateway discovery failed", "err", err, "retry_in", wait)
		if !c.sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// open runs one Session.Open, bounded by OpenTimeout and ctx: when either ends first, the dialed
// connection is closed so Open returns.
func (c *Channel) open(ctx context.Context) error {
	c.setDownIfNotConnected("connecting to the gateway")
	res := make(chan error, 1)
	go func() { res <- c.sess.Open() }()
	var err error
	select {
	case err = <-res:
		return err
	case <-ctx.Done():
		c.conns.closeLatest()
		err = <-res
		if err == nil {
			_ = c.sess.Close()
		}
		return ctx.Err()
	case <-c.clock.After(c.cfg.OpenTimeout):
		c.conns.closeLatest()
		if err = <-res; err == nil {
			return nil // it made it after all; a broken one drops and is replaced
		}
		return fmt.Errorf("%w after %s: %v", ErrOpenTimeout, c.cfg.OpenTimeout, err)
	}
}

func (c *Channel) setDownIfNotConnected(detail string) {
	c.mu.Lock()
	if !c.state.connected {
		c.state.detail = detail
	}
	c.mu.Unlock()
}

// permanent maps errors that retrying cannot fix to a descriptive error, or returns nil.
func permanent(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4004:
			return fmt.Errorf("discord: gateway: %w (close 4004 authentication failed): set DISCORD_BOT_TOKEN to the current bot token (Developer Portal → Bot → Reset Token)", ErrUnauthorized)
		case 4013, 4014:
			return fmt.Errorf("discord: gateway: %w (close %d %s): enable MESSAGE CONTENT INTENT under Developer Portal → your application → Bot → Privileged Gateway Intents, or set discord.message_content: off (mentions and DMs work without it)", ErrDisallowedIntents, ce.Code, ce.Text)
		case 4010, 4011:
			return fmt.Errorf("discord: gateway: %w (close %d %s): set discord.shard_count to the number of shards Discord recommends and shard_id in [0, shard_count)", ErrSharding, ce.Code, ce.Text)
		case 4012:
			return fmt.Errorf("discord: gateway: %w (close 4012 invalid API version %s): upgrade echogate", ErrGatewayRejected, ce.Text)
		}
	}
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, discordgo.ErrUnauthorized) || restStatus(err) == http.StatusUnauthorized {
		return fmt.Errorf("discord: gateway: %w: set DISCORD_BOT_TOKEN to the current bot token (Developer Portal → Bot → Reset Token)", ErrUnauthorized)
	}
	if errors.Is(err, discordgo.ErrWSShardBounds) {
		return fmt.Errorf("discord: gateway: %w: %v", ErrSharding, err)
	}
	return nil
}

// spawn runs fn in a goroutine that Run waits for; it reports false (and does not run fn) once
// Run has returned.
func (c *Channel) spawn(fn func()) bool {
	c.goMu.Lock()
	defer c.goMu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.recovered(nil, "background task")
		fn()
	}()
	return true
}

// onReady records the bot user.
func (c *Channel) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User != nil && r.User.ID != "" {
		id, name := r.User.ID, r.User.Username
		if r.User.GlobalName != "" {
			name = r.User.GlobalName
		}
		c.botID.Store(&id)
		c.botName.Store(&name)
	}
	app := ""
	if r.Application != nil {
		app = r.Application.ID
	}
	if app == "" && r.User != nil {
		app = r.User.ID // a bot's application id is its user id
	}
	c.registerCommands(app)
	c.log.Debug("discord: READY", "shard", c.cfg.ShardID)
}

// onDisconnect signals Run's loop. It runs synchronously inside discordgo's Close.
func (c *Channel) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	select {
	case c.disconnected <- struct{}{}:
	default:
	}
}

// connTracker remembers the latest dialed gateway connection so a stuck Open can be aborted,
// and whether it was closed since (see stillConnected).
type connTracker struct {
	timeout time.Duration
	mu      sync.Mutex
	latest  *trackedConn
}

// trackedConn is a dialed connection that records its Close: discordgo closes its websocket
// (and so this connection) before it emits Disconnect.
type trackedConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *trackedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: t.timeout, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn}
	t.mu.Lock()
	t.latest = tc
	t.mu.Unlock()
	return tc, nil
}

// latestOpen reports whether the connection dialed last exists and was not closed.
func (t *connTracker) latestOpen() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latest != nil && !t.latest.closed.Load()
}

func (t *connTracker) closeLatest() {
	t.mu.Lock()
	conn := t.latest
	t.latest = nil
	t.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}
