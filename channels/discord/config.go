package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

// Defaults applied by New for zero Config fields.
const (
	DefaultAPIURL              = "https://discord.com/api/v9/"
	DefaultShardCount          = 1
	DefaultEditInterval        = time.Second
	DefaultTypingInterval      = 8 * time.Second
	DefaultRequestTimeout      = 15 * time.Second
	DefaultOpenTimeout         = 30 * time.Second
	DefaultBackoffInitial      = time.Second
	DefaultBackoffMax          = 2 * time.Minute
	DefaultStableAfter         = 30 * time.Second
	DefaultBreakerFailures     = 5
	DefaultBreakerWindow       = 2 * time.Minute
	DefaultBreakerCooldown     = time.Minute
	DefaultHealthInterval      = time.Second
	DefaultHeartbeatTimeout    = 90 * time.Second
	DefaultChannelBurst        = 5
	DefaultChannelRefill       = time.Second
	DefaultMaxRateLimitRetries = 5
	DefaultMaxRetryAfter       = time.Minute
	DefaultSinkTimeout         = 10 * time.Second
	DefaultThreadHistory       = 20

	// MaxMessageLength is Discord's limit for the content of one message.
	MaxMessageLength = 2000
)

// discordAPIPrefix is the REST prefix discordgo builds every URL from. The transport rewrites it
// to Config.APIURL; discordgo's package-level endpoint variables are never mutated.
const discordAPIPrefix = "https://discord.com/api/v9/"

// Config configures the Discord channel. The zero value of every field means its default; the bot
// token is the only required value.
type Config struct {
	// Token is the bot token from the Developer Portal (Bot → Reset Token), with or without the
	// "Bot " prefix. Required. Never logged.
	Token string
	// APIURL is the REST base URL; default https://discord.com/api/v9/. A REST rate-limit proxy
	// or a test server goes here; the gateway URL is discovered from it (GET {APIURL}gateway).
	// A trailing "/" is added when missing.
	APIURL string
	// ShardID and ShardCount shard the gateway connection: this process receives the guild
	// events of guilds where (guild_id >> 22) % ShardCount == ShardID, and DMs only on shard 0.
	// ShardCount defaults to 1.
	ShardID    int
	ShardCount int
	// RequireMention says whether guild messages must @-mention the bot (or reply to one of its
	// messages) to be answered. nil means true. DMs never need a mention.
	RequireMention *bool
	// MessageContent asks for the privileged MESSAGE_CONTENT intent, needed only to read guild
	// messages that do not mention the bot (RequireMention false). DMs, mentions and the
	// bot's own messages carry their content without it. Default false.
	MessageContent bool
	// ThreadHistory is how many earlier messages of a thread (or the referenced message of a
	// reply) the model sees when the bot is first addressed there; default 20, negative off.
	ThreadHistory int
	// CommandGuilds registers the /echogate application command in these guilds (instantly)
	// instead of globally (which Discord may take up to an hour to show). Registration is a
	// bulk overwrite, so restarts never duplicate it.
	CommandGuilds []string
	// DisableCommands skips registering the application command.
	DisableCommands bool
	// EditInterval is the minimum time between two edits of one streamed message; default 1s.
	EditInterval time.Duration
	// TypingInterval is how often the typing indicator of a running turn is refreshed (Discord
	// shows it for about 10 s); default 8s.
	TypingInterval time.Duration
	// HTTPClient sends REST requests; default a client with RequestTimeout. Its Transport is
	// wrapped to rewrite discord.com to APIURL; the client itself is not modified.
	HTTPClient *http.Client
	// RequestTimeout bounds one REST call (including discordgo's own bucket waits when the
	// caller's context has no earlier deadline); default 15s.
	RequestTimeout time.Duration
	// OpenTimeout bounds one gateway connection attempt (dial, Hello, Identify/Resume,
	// READY/RESUMED); default 30s.
	OpenTimeout time.Duration
	// Backoff between reconnection attempts: exponential from BackoffInitial (default 1s) to
	// BackoffMax (default 2m) with jitter. The first reconnect after a stable connection is
	// immediate.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// StableAfter is how long a connection must live to count as healthy; shorter ones count as
	// failures for the backoff and the breaker. Default 30s.
	StableAfter time.Duration
	// BreakerFailures connection failures within BreakerWindow open the reconnect breaker: no
	// attempt is made for BreakerCooldown, and Ready reports why. Defaults 5, 2m, 1m.
	BreakerFailures int
	BreakerWindow   time.Duration
	BreakerCooldown time.Duration
	// HealthInterval is how often the heartbeat ACKs of the connection are checked; default 1s.
	HealthInterval time.Duration
	// HeartbeatTimeout is how long a connection may go without a heartbeat ACK before it is
	// considered a zombie, until the heartbeat interval has been measured (then 2 intervals
	// are used). Default 90s (Discord's interval is about 41 s).
	HeartbeatTimeout time.Duration
	// ChannelBurst and ChannelRefill size the outbound budget of each Discord channel: a token
	// bucket of ChannelBurst tokens (default 5) gaining one token per ChannelRefill (default
	// 1s), shared by posts, edits and typing. Finals, prompts and notices wait for a token;
	// intermediate stream edits and typing refreshes are skipped instead.
	ChannelBurst  int
	ChannelRefill time.Duration
	// MaxRateLimitRetries is how often one REST call is retried after a 429; default 5.
	MaxRateLimitRetries int
	// MaxRetryAfter is the longest 429 retry_after that is waited for inside a call; a longer
	// one is returned as *echogate.RetryAfterError. Default 1m.
	MaxRetryAfter time.Duration
	// SinkTimeout bounds one call of the sink; default 10s.
	SinkTimeout time.Duration
	// OnPanic, when set, is told of every panic recovered in a send, stream, edit or background
	// path (path names it); cmd counts them in echogate_adapter_panics_total.
	OnPanic func(path string)
	// SessionOf finds the conversation of a message the bot posted from the gateway's store (an
	// approval prompt), so a reaction on it is not dropped after a restart when the payload
	// lacks message_author_id and GET message fails. Asked before the API; nil: not asked.
	SessionOf func(ctx context.Context, ref echogate.MessageRef) (echogate.ConversationRef, bool)
	// Admits reports whether the gateway's access rules let an event in (cmd wires the
	// pipeline's rule: one implementation). The channel asks it before any REST read an event
	// would cost (the thread's kind and history), so a refused person costs nothing but the
	// pipeline's refusal; the event is still handed to the sink, which decides and records
	// the refusal. nil admits everyone.
	Admits func(ev echogate.InboundEvent) bool
	// Clock is the time source for timers, throttling and backoff; default the system clock.
	Clock Clock
	// Jitter returns a random duration in [0, max); default math/rand/v2. Tests make it
	// deterministic.
	Jitter func(max time.Duration) time.Duration
}

// Bool returns a pointer to v, for Config.RequireMention.
func Bool(v bool) *bool { return &v }

// withDefaults validates cfg and fills in defaults.
func (cfg Config) withDefaults() (Config, error) {
	tok, err := botToken(cfg.Token)
	if err != nil {
		return cfg, err
	}
	cfg.Token = tok
	if cfg.APIURL, err = apiURL(cfg.APIURL); err != nil {
		return cfg, err
	}
	if cfg.ShardCount == 0 {
		cfg.ShardCount = DefaultShardCount
	}
	if cfg.ShardCount < 0 {
		return cfg, fmt.Errorf("discord: config: shard_count %d is negative: use 1 (no sharding) or the number of shards", cfg.ShardCount)
	}
	if cfg.ShardID < 0 || cfg.ShardID >= cfg.ShardCount {
		return cfg, fmt.Errorf("discord: config: shard_id %d out of range: must be in [0, shard_count=%d)", cfg.ShardID, cfg.ShardCount)
	}
	if cfg.RequireMention == nil {
		cfg.RequireMention = Bool(true)
	}
	if err := cfg.numbersWithDefaults(); err != nil {
		return cfg, err
	}
	if cfg.ThreadHistory == 0 {
		cfg.ThreadHistory = DefaultThreadHistory
	}
	for _, g := range cfg.CommandGuilds {
		if g == "" || strings.Trim(g, "0123456789") != "" {
			return cfg, fmt.Errorf("discord: config: command_guilds entry %q is not a guild id (a number; Developer Mode → right-click the server → Copy Server ID)", g)
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = randJitter
	}
	return cfg, nil
}

// botToken checks the configured token and returns it as the Authorization value ("Bot …"),
// whether or not it was given with its "Bot " prefix.
func botToken(raw string) (string, error) {
	tok := strings.TrimSpace(raw)
	if tok == "Bot" || strings.HasPrefix(tok, "Bot ") {
		tok = strings.TrimSpace(strings.TrimPrefix(tok, "Bot"))
	}
	if tok == "" {
		return "", fmt.Errorf("discord: config: %w: set discord.token or DISCORD_BOT_TOKEN to the bot token from the Developer Portal (Bot → Reset Token)", ErrNoToken)
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("discord: config: token contains whitespace: paste the bot token exactly as shown in the Developer Portal")
	}
	if strings.HasPrefix(tok, "Bearer ") {
		return "", fmt.Errorf("discord: config: token is an OAuth2 bearer token: use the bot token from the Developer Portal (Bot → Reset Token)")
	}
	return "Bot " + tok, nil
}

// apiURL checks the REST base URL (DefaultAPIURL when empty) and returns it ending in "/".
func apiURL(raw string) (string, error) {
	if raw == "" {
		raw = DefaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return raw, fmt.Errorf("discord: config: api_url %q is not an absolute http(s) URL: use e.g. %s", raw, DefaultAPIURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return raw, fmt.Errorf("discord: config: api_url %q must not have a query or fragment", raw)
	}
	if !strings.HasSuffix(raw, "/") {
		raw += "/"
	}
	return raw, nil
}

// numbersWithDefaults refuses negative durations and counts and fills the zero ones with
// their defaults.
func (cfg *Config) numbersWithDefaults() error {
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"edit_interval", &cfg.EditInterval, DefaultEditInterval},
		{"typing_interval", &cfg.TypingInterval, DefaultTypingInterval},
		{"request_timeout", &cfg.RequestTimeout, DefaultRequestTimeout},
		{"open_timeout", &cfg.OpenTimeout, DefaultOpenTimeout},
		{"backoff_initial", &cfg.BackoffInitial, DefaultBackoffInitial},
		{"backoff_max", &cfg.BackoffMax, DefaultBackoffMax},
		{"stable_after", &cfg.StableAfter, DefaultStableAfter},
		{"breaker_window", &cfg.BreakerWindow, DefaultBreakerWindow},
		{"breaker_cooldown", &cfg.BreakerCooldown, DefaultBreakerCooldown},
		{"health_interval", &cfg.HealthInterval, DefaultHealthInterval},
		{"heartbeat_timeout", &cfg.HeartbeatTimeout, DefaultHeartbeatTimeout},
		{"channel_refill", &cfg.ChannelRefill, DefaultChannelRefill},
		{"max_retry_after", &cfg.MaxRetryAfter, DefaultMaxRetryAfter},
		{"sink_timeout", &cfg.SinkTimeout, DefaultSinkTimeout},
	}
	for _, d := range durations {
		if *d.v < 0 {
			return fmt.Errorf("discord: config: %s %s is negative: use a positive duration or 0 for the default %s", d.name, *d.v, d.def)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.BackoffMax < cfg.BackoffInitial {
		return fmt.Errorf("discord: config: backoff_max %s is below backoff_initial %s", cfg.BackoffMax, cfg.BackoffInitial)
	}
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"breaker_failures", &cfg.BreakerFailures, DefaultBreakerFailures},
		{"channel_burst", &cfg.ChannelBurst, DefaultChannelBurst},
		{"max_rate_limit_retries", &cfg.MaxRateLimitRetries, DefaultMaxRateLimitRetries},
	}
	for _, n := range ints {
		if *n.v < 0 {
			return fmt.Errorf("discord: config: %s %d is negative: use a positive number or 0 for the default %d", n.name, *n.v, n.def)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	return nil
}
