package slack

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
	DefaultAPIURL               = "https://slack.com/api/"
	DefaultStreamUpdateInterval = time.Second
	DefaultRequestTimeout       = 15 * time.Second
	DefaultChannelRate          = 1.0 // requests per second per Slack channel
	DefaultChannelBurst         = 4
	DefaultTypingRefresh        = 60 * time.Second
	DefaultQueueSize            = 256
	DefaultThreadHistory        = 20
	DefaultThreadReadsPerMinute = 1.0 // conversations.replies for apps outside the Marketplace
	DefaultCommand              = "/echogate"
	// MaxSocketConnections is Slack's limit of open Socket Mode connections per app.
	MaxSocketConnections = 10
)

// Config configures the Slack channel. The zero value of every field means its default; the bot
// token is the only required value.
type Config struct {
	// BotToken is the bot user OAuth token (xoxb-…). Required.
	BotToken string
	// AppToken is the app-level token (xapp-…) with connections:write. When set, Run connects
	// with Socket Mode; otherwise Run waits for events delivered to EventsHandler.
	AppToken string
	// SocketConnections is how many Socket Mode connections Run opens (default 1, at most
	// MaxSocketConnections, Slack's limit per app across all processes): Slack sends each
	// event to one of the app's open connections, so more connections spread the events and
	// keep some open while one reconnects.
	SocketConnections int
	// SigningSecret verifies requests to the HTTP Events API endpoint (EventsHandler). Without
	// it EventsHandler refuses every request.
	SigningSecret string
	// APIURL is the Web API base URL; default https://slack.com/api/. Must end in "/" (added
	// when missing). GovSlack, proxies and tests override it.
	APIURL string
	// RequireMention says whether channel messages must @-mention the bot to be answered; when
	// false, follow-ups in a thread the bot already replied in are answered too. nil means
	// true. DMs never need a mention.
	RequireMention *bool
	// Channels overrides settings per Slack channel id (C…, G…).
	Channels map[string]ChannelConfig
	// ReplyInThread answers a top-level channel mention in a thread under it (and makes that
	// thread the session). nil means true.
	ReplyInThread *bool
	// SessionOf finds the conversation of a message the bot posted from the gateway's store
	// (an approval prompt), so a reaction on it is not dropped after a restart when the
	// platform's API fails. Asked after the channel's memory, before the API; nil: not asked.
	SessionOf func(ctx context.Context, ref echogate.MessageRef) (echogate.ConversationRef, bool)
	// Admits reports whether the gateway's access rules let an event in (cmd wires the
	// pipeline's rule: one implementation). The channel asks it before any Web API read an
	// event would cost (thread history, users.info, looking up a reacted message, the thread
	// title), so a refused person costs nothing but the pipeline's refusal; the event is still
	// handed to the sink, which decides and records the refusal. nil admits everyone.
	Admits func(ev echogate.InboundEvent) bool
	// StreamUpdateInterval is the minimum time between two visible updates of a streamed
	// reply (native appends or chat.update edits); default 1s.
	StreamUpdateInterval time.Duration
	// ChannelRate and ChannelBurst size the outbound budget of each Slack channel: a token
	// bucket shared by finals, approval prompts, stream updates and progress indicators
	// (finals first). Defaults 1/s and 4. There is no global limiter across channels.
	ChannelRate  float64
	ChannelBurst int
	// RequestTimeout bounds one Web API call; default 15s.
	RequestTimeout time.Duration
	// TypingRefresh is how often a running turn's status indicator is refreshed; default 60s.
	TypingRefresh time.Duration
	// QueueSize bounds the events accepted but not yet handed to the sink; default 256. When it
	// is full, Socket Mode envelopes are not acknowledged (Slack redelivers them later) and
	// the Events API answers 503.
	QueueSize int
	// DisableNativeStreaming skips chat.startStream and always streams with chat.update.
	DisableNativeStreaming bool
	// ThreadHistory is how many earlier messages of a thread the model sees when the bot is
	// first addressed inside it; default 20, negative turns thread context off.
	ThreadHistory int
	// ThreadReadsPerMinute bounds the conversations.replies calls made for thread context;
	// default 1 (Slack's limit for apps not in the Marketplace; Marketplace apps may raise it).
	ThreadReadsPerMinute float64
	// Command is the slash command the app registers (manifest features.slash_commands);
	// default "/echogate". Its text is a subcommand: usage, model, stop, new, help.
	Command string
	// SuggestedPrompts are offered when a user opens the app's messages tab or starts an
	// assistant thread (assistant.threads.setSuggestedPrompts); none by default. Slack shows
	// at most four.
	SuggestedPrompts []SuggestedPrompt
	// NameResolved, when set, is told each display name the channel learns from users.info
	// (user id, name), so a directory outside the adapter can show names next to ids. It is
	// called from the channel's goroutines and must return quickly.
	NameResolved func(user, name string)
	// HTTPClient makes the Web API calls; default a new http.Client.
	HTTPClient *http.Client
	// Clock is the time source; default the system clock.
	Clock Clock
	// OnPanic, when set, is told of every panic recovered in a send, stream, edit or background
	// path (path names it); cmd counts them in echogate_adapter_panics_total.
	OnPanic func(path string)
}

// SuggestedPrompt is one prompt offered at the start of an assistant thread: Title is shown,
// Message is sent when the user picks it.
type SuggestedPrompt struct {
	Title   string
	Message string
}

// ChannelConfig holds per-channel overrides.
type ChannelConfig struct {
	// RequireMention overrides Config.RequireMention for this channel when non-nil.
	RequireMention *bool
}

// Bool returns a pointer to b, for the optional booleans of Config.
func Bool(b bool) *bool { return &b }

// withDefaults validates c and fills defaults.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, configError(format, args...)
	}
	if err := c.checkTokens(); err != nil {
		return Config{}, err
	}
	if err := c.checkAPIURL(); err != nil {
		return Config{}, err
	}
	if c.StreamUpdateInterval < 0 || c.RequestTimeout < 0 || c.TypingRefresh < 0 || c.ChannelRate < 0 || c.ChannelBurst < 0 || c.QueueSize < 0 {
		return bad("durations, rates and sizes must not be negative")
	}
	if c.StreamUpdateInterval == 0 {
		c.StreamUpdateInterval = DefaultStreamUpdateInterval
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.TypingRefresh == 0 {
		c.TypingRefresh = DefaultTypingRefresh
	}
	if c.ChannelRate == 0 {
		c.ChannelRate = DefaultChannelRate
	}
	if c.ChannelBurst == 0 {
		c.ChannelBurst = DefaultChannelBurst
	}
	if c.ChannelBurst < 2 {
		return bad("channel burst must be at least 2 (one token stays reserved for final replies)")
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.SocketConnections < 0 || c.SocketConnections > MaxSocketConnections {
		return bad("slack.socket_connections %d: give 1 to %d (Slack allows %d per app, across every replica)", c.SocketConnections, MaxSocketConnections, MaxSocketConnections)
	}
	if c.SocketConnections == 0 {
		c.SocketConnections = 1
	}
	if c.ThreadHistory == 0 {
		c.ThreadHistory = DefaultThreadHistory
	}
	if c.ThreadReadsPerMinute < 0 {
		return bad("thread reads per minute must not be negative")
	}
	if c.ThreadReadsPerMinute == 0 {
		c.ThreadReadsPerMinute = DefaultThreadReadsPerMinute
	}
	if c.Command == "" {
		c.Command = DefaultCommand
	}
	if !strings.HasPrefix(c.Command, "/") || len(c.Command) < 2 || strings.ContainsAny(c.Command, " \t") {
		return bad("slack.command %q must be a slash command like /echogate (the name in the app manifest)", c.Command)
	}
	if len(c.SuggestedPrompts) > 4 {
		return bad("slack.suggested_prompts has %d prompts: Slack shows at most 4", len(c.SuggestedPrompts))
	}
	for i, p := range c.SuggestedPrompts {
		if strings.TrimSpace(p.Title) == "" || strings.TrimSpace(p.Message) == "" {
			return bad("slack.suggested_prompts[%d] needs both a title and a message", i)
		}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	for id := range c.Channels {
		if id == "" {
			return bad("slack.channels has an empty channel id: use the channel id (C…/G…) as the key")
		}
	}
	return c, nil
}

// configError wraps ErrConfig with a message naming the setting at fault and the fix.
func configError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// checkTokens trims the tokens and the signing secret, checks each is of its kind (a pasted
// token of the other kind is named), and that one transport is set: Socket Mode or the Events API.
func (c *Config) checkTokens() error {
	c.BotToken = strings.TrimSpace(c.BotToken)
	c.AppToken = strings.TrimSpace(c.AppToken)
	c.SigningSecret = strings.TrimSpace(c.SigningSecret)
	switch {
	case c.BotToken == "":
		return configError("bot token is empty: set slack.bot_token or SLACK_BOT_TOKEN to the Bot User OAuth Token (xoxb-…) from your app's OAuth & Permissions page")
	case strings.HasPrefix(c.BotToken, "xapp-"):
		return configError("bot token starts with xapp-, which is an app-level token: put it in slack.app_token / SLACK_APP_TOKEN and set the bot token to the xoxb-… Bot User OAuth Token")
	case !strings.HasPrefix(c.BotToken, "xoxb-"):
		return configError("bot token must start with xoxb- (Bot User OAuth Token from OAuth & Permissions); user tokens (xoxp-) and legacy tokens are not supported")
	}
	if c.AppToken != "" && !strings.HasPrefix(c.AppToken, "xapp-") {
		if strings.HasPrefix(c.AppToken, "xoxb-") {
			return configError("app token starts with xoxb-, which is a bot token: set slack.app_token / SLACK_APP_TOKEN to the app-level token (xapp-…) from Basic Information > App-Level Tokens, with the connections:write scope")
		}
		return configError("app token must start with xapp- (Basic Information > App-Level Tokens, scope connections:write)")
	}
	if c.AppToken == "" && c.SigningSecret == "" {
		return configError("neither an app token (Socket Mode) nor a signing secret (Events API) is set: set SLACK_APP_TOKEN=xapp-… for Socket Mode, or SLACK_SIGNING_SECRET for POST /slack/events")
	}
	return nil
}

// checkAPIURL defaults the API URL and checks it is an absolute http(s) URL; it ends in a slash.
func (c *Config) checkAPIURL() error {
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	u, err := url.Parse(c.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return configError("api url %q is not an absolute http(s) URL: set slack.api_url / SLACK_API_URL like https://slack.com/api/", c.APIURL)
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	return nil
}

func (c Config) requireMention(channel string) bool {
	if cc, ok := c.Channels[channel]; ok && cc.RequireMention != nil {
		return *cc.RequireMention
	}
	return c.RequireMention == nil || *c.RequireMention
}

func (c Config) replyInThread() bool { return c.ReplyInThread == nil || *c.ReplyInThread }
