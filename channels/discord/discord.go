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
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

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

	sess, err := newSession(cfg)
	if err != nil {
		return nil, err
	}
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

// newSession builds the discordgo session for cfg: REST through an HTTP client rewritten to
// cfg.APIURL, discordgo's own reconnecting, retrying, state cache and logging switched off
// (Channel does each itself), and the identify payload with cfg's intents and shard.
func newSession(cfg Config) (*discordgo.Session, error) {
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
	return sess, nil
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
