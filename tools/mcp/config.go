// Package mcp adds the tools of Model Context Protocol servers to a gateway's tools.Registry,
// on the official SDK (github.com/modelcontextprotocol/go-sdk).
//
// A Manager supervises every configured server: it connects at start (stdio: a child process;
// streamable HTTP: a URL with configured headers), lists the server's tools and registers each as
// "<server>__<tool>" wrapped in its own circuit breaker, follows notifications/tools/list_changed,
// and when the session ends unregisters the server's tools and reconnects with exponential backoff
// and jitter. Registration is asynchronous: a server that is down never delays a turn, and a call
// to a server that is not connected returns an IsError result at once.
//
// Tool output is untrusted: results are capped and fenced as
//
//	<<<tool output from SERVER (untrusted)>>>
//	…
//	<<<end>>>
//
// Which servers a conversation may use is decided by ServerConfig.AllowChannels / AllowUsers;
// the pipeline applies it through Manager.ToolFilter.
package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/echogate/echogate/tools"
)

// Defaults.
const (
	DefaultMaxOutput      = 32 << 10
	DefaultCallTimeout    = 60 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	DefaultPingInterval   = 30 * time.Second
	DefaultReconnectMin   = time.Second
	DefaultReconnectMax   = 2 * time.Minute
	// maxServerName bounds server names so that "<server>__<tool>" keeps room for the tool
	// within the 64 characters tool names may have.
	maxServerName = 24
)

// Config configures a Manager. The zero value means no servers and the documented defaults.
type Config struct {
	Servers []ServerConfig
	// ReconnectMin is the first delay before reconnecting a server whose session ended or
	// could not be opened; each further failed attempt doubles it (with jitter) up to
	// ReconnectMax. A session that stayed up for 30s resets the delay. Defaults 1s and 2m.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// ConnectTimeout bounds one connection attempt: start/dial, the MCP handshake and the first
	// tools/list. Default 30s.
	ConnectTimeout time.Duration
	// PingInterval is how often a connected server is pinged; two pings in a row that fail or
	// get no answer within min(PingInterval, 10s), or one that finds the connection closed, end
	// the session (and a reconnect follows). It is how a dead HTTP server is noticed between
	// calls. Default 30s; negative disables pings.
	PingInterval time.Duration
	// Breaker configures the circuit breaker of every MCP tool (each tool has its own).
	// A server's CallTimeout, when set, replaces Breaker.CallTimeout; when neither is set calls
	// are bounded by DefaultCallTimeout.
	Breaker tools.BreakerConfig

	// Tokens keeps the grants of servers with auth: oauth (required when there is one).
	Tokens TokenStore
	// OAuthRedirectURL is where authorization servers send the browser back after a login:
	// the gateway's /oauth/callback. Required when a server has auth: oauth.
	OAuthRedirectURL string
	// OAuthHTTPClient makes OAuth metadata, registration and token requests (default:
	// bounded timeouts).
	OAuthHTTPClient *http.Client
	// Now is the clock of token expiry and login states (default time.Now).
	Now func() time.Time

	// Elicit, when set, answers servers' questions during tool calls (elicitation, form and
	// URL mode) by asking the person who started the call; without it the client does not
	// offer elicitation and servers do not ask. ElicitTimeout bounds each question (default
	// 5m): then it is declined and the call goes on.
	Elicit        Elicitor
	ElicitTimeout time.Duration

	// Authorize (may be nil) is told when a person's call to an auth: oauth_per_user server
	// found no usable grant of theirs: send them the login link privately (Logins().Begin with
	// their user id). The call itself returns an "authorize first" result.
	Authorize func(ctx context.Context, a Authorization)
}

// ServerConfig is one MCP server. Exactly one of Command (stdio) or URL (streamable HTTP) is set.
type ServerConfig struct {
	// Name prefixes the server's tools ("<name>__<tool>"): 1 to 24 letters, digits, '-' or
	// single '_' (not "__", not at either end). Unique among servers.
	Name string

	// Command runs a stdio server: the executable (looked up in PATH), its Args, and Env added
	// to a minimal environment (PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR). The
	// gateway's own environment, with its tokens and keys, is never passed on. Dir is the
	// working directory (empty: the gateway's).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL is a streamable-HTTP server endpoint (http or https). Headers are sent with every
	// request (e.g. Authorization); their values are never logged.
	URL     string
	Headers map[string]string

	// Auth is "" (none, or static Headers) or "oauth": the server is behind OAuth 2.1 and the
	// gateway holds one grant for it, made by a login (`echogate mcp login NAME`) and kept in
	// Config.Tokens. Until a login, or after the server refuses the token, the server shows
	// "needs login" and its tools are withheld.
	Auth string
	// ClientID is a client registered beforehand with the server's authorization server
	// (public client, no secret). Empty: ClientMetadataURL, else dynamic registration.
	ClientID string
	// ClientSecret goes with ClientID for a confidential client (sent as the authorization
	// server's metadata prefers: client_secret_post or client_secret_basic); never logged.
	ClientSecret string
	// ClientMetadataURL is an https URL (with a path) serving this gateway's Client ID
	// Metadata Document; used when the authorization server supports it.
	ClientMetadataURL string
	// Scopes to ask for; empty: what the server's metadata or challenge names.
	Scopes []string

	// Safety is the default safety class of the server's tools: "safe", "sensitive" or
	// "destructive". Empty means "sensitive": every call needs approval.
	Safety string
	// ToolSafety overrides Safety per tool, keyed by the server's own (bare) tool name.
	ToolSafety map[string]string

	// CallTimeout bounds one tool call; a call that runs out of it counts as a failure for the
	// tool's breaker. Default: Config.Breaker.CallTimeout, else 60s.
	CallTimeout time.Duration
	// MaxOutput caps the text a call returns to the model, in bytes. Default 32 KiB.
	MaxOutput int

	// AllowChannels and AllowUsers restrict which conversations may use the server's tools:
	// AllowChannels lists "platform:channel" ids ("slack:C0123", or "slack:*" for a whole
	// platform), AllowUsers lists qualified user ids ("slack:U0123"). An empty list does not
	// restrict; when both are set a conversation must match both.
	AllowChannels []string
	AllowUsers    []string
}

// oauth reports whether the server logs in with OAuth (per server or per user).
func (s ServerConfig) oauth() bool { return s.Auth == AuthOAuth || s.Auth == AuthOAuthPerUser }

// Transport reports "stdio" or "http".
func (s ServerConfig) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

func (c Config) withDefaults() Config {
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = DefaultReconnectMin
	}
	if c.ReconnectMax <= 0 {
		c.ReconnectMax = DefaultReconnectMax
	}
	if c.ReconnectMax < c.ReconnectMin {
		c.ReconnectMax = c.ReconnectMin
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ElicitTimeout <= 0 {
		c.ElicitTimeout = DefaultElicitTimeout
	}
	if c.OAuthHTTPClient == nil {
		c.OAuthHTTPClient = oauthHTTPClient()
	}
	if c.PingInterval == 0 {
		c.PingInterval = DefaultPingInterval
	}
	return c
}

// reservedHeaders are set by the transport itself; configuring them would break the protocol.
var reservedHeaders = map[string]bool{
	"Content-Type": true, "Accept": true, "Content-Length": true, "Host": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
}

// validate checks one server's config; i is its index in mcp.servers (for messages).
func (s ServerConfig) validate(i int) error {
	where := fmt.Sprintf("mcp.servers[%d]", i)
	if s.Name != "" {
		where = fmt.Sprintf("mcp.servers[%d] (%s)", i, s.Name)
	}
	if err := validateServerName(s.Name); err != nil {
		return fmt.Errorf("%w: %s.name: %v", ErrConfig, where, err)
	}
	switch {
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("%w: %s: set command (a stdio server) or url (a streamable HTTP server)", ErrConfig, where)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("%w: %s: set either command or url, not both", ErrConfig, where)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: %s.url %q: want an absolute http:// or https:// URL such as https://mcp.example.com/mcp", ErrConfig, where, redactURL(s.URL))
		}
		if len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "" {
			return fmt.Errorf("%w: %s: args, env and dir apply to stdio servers (command), not to url servers", ErrConfig, where)
		}
		for k := range s.Headers {
			ck := canonicalHeader(k)
			if ck == "" || strings.ContainsAny(k, " :\r\n\t") {
				return fmt.Errorf("%w: %s.headers: %q is not a valid header name", ErrConfig, where, k)
			}
			if reservedHeaders[ck] {
				return fmt.Errorf("%w: %s.headers: %s is set by the MCP transport itself; remove it", ErrConfig, where, ck)
			}
			if strings.ContainsAny(s.Headers[k], "\r\n") {
				return fmt.Errorf("%w: %s.headers.%s: the value holds a line break; remove it", ErrConfig, where, k)
			}
		}
	} else {
		if len(s.Headers) > 0 {
			return fmt.Errorf("%w: %s: headers apply to url servers, not to stdio servers (use env)", ErrConfig, where)
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("%w: %s.env: %q is not a valid variable name", ErrConfig, where, k)
			}
		}
	}
	if err := s.validateAuth(where); err != nil {
		return err
	}
	if _, err := parseSafety(s.Safety); err != nil {
		return fmt.Errorf("%w: %s.safety: %v", ErrConfig, where, err)
	}
	for tool, v := range s.ToolSafety {
		if tool == "" {
			return fmt.Errorf("%w: %s.tool_safety: an empty tool name; use the server's own tool name", ErrConfig, where)
		}
		if _, err := parseSafety(v); err != nil {
			return fmt.Errorf("%w: %s.tool_safety.%s: %v", ErrConfig, where, tool, err)
		}
	}
	if s.CallTimeout < 0 {
		return fmt.Errorf("%w: %s.call_timeout %s: must not be negative (0 means the default %s)", ErrConfig, where, s.CallTimeout, DefaultCallTimeout)
	}
	if s.MaxOutput < 0 {
		return fmt.Errorf("%w: %s.max_output %d: must not be negative (0 means the default %d)", ErrConfig, where, s.MaxOutput, DefaultMaxOutput)
	}
	for _, c := range s.AllowChannels {
		if p, id, ok := strings.Cut(c, ":"); !ok || p == "" || id == "" {
			return fmt.Errorf("%w: %s.allow_channels: %q: want platform:channel, e.g. slack:C0123 or slack:*", ErrConfig, where, c)
		}
	}
	for _, u := range s.AllowUsers {
		if p, id, ok := strings.Cut(u, ":"); !ok || p == "" || id == "" {
			return fmt.Errorf("%w: %s.allow_users: %q: want a qualified user id, e.g. slack:U0123", ErrConfig, where, u)
		}
	}
	return nil
}

func (s ServerConfig) validateAuth(where string) error {
	switch s.Auth {
	case AuthNone:
		if s.ClientID != "" || s.ClientSecret != "" || s.ClientMetadataURL != "" || len(s.Scopes) > 0 {
			return fmt.Errorf("%w: %s: client_id, client_secret, client_metadata_url and scopes apply to auth: oauth; add it or remove them", ErrConfig, where)
		}
		return nil
	case AuthOAuth, AuthOAuthPerUser:
	default:
		return fmt.Errorf("%w: %s.auth %q: want oauth or oauth_per_user, or leave it out (no auth, or static headers)", ErrConfig, where, s.Auth)
	}
	if s.URL == "" {
		return fmt.Errorf("%w: %s: auth: %s applies to url servers, not to stdio servers", ErrConfig, where, s.Auth)
	}
	for k := range s.Headers {
		if canonicalHeader(k) == "Authorization" {
			return fmt.Errorf("%w: %s.headers: Authorization is set by auth: oauth; remove one of them", ErrConfig, where)
		}
	}
	if s.ClientSecret != "" && s.ClientID == "" {
		return fmt.Errorf("%w: %s: client_secret needs the client_id it belongs to", ErrConfig, where)
	}
	if s.ClientMetadataURL != "" {
		u, err := url.Parse(s.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return fmt.Errorf("%w: %s.client_metadata_url %q: want an https URL with a path, e.g. https://gateway.example.com/oauth/client.json", ErrConfig, where, s.ClientMetadataURL)
		}
	}
	for _, sc := range s.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"") {
			return fmt.Errorf("%w: %s.scopes: %q is not a scope (one word per entry)", ErrConfig, where, sc)
		}
	}
	return nil
}

func validateServerName(name string) error {
	if name == "" || len(name) > maxServerName {
		return fmt.Errorf("%q must be 1 to %d characters", name, maxServerName)
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return fmt.Errorf("%q may hold only letters, digits, '-' and '_'", name)
		}
	}
	if strings.Contains(name, "__") || strings.HasPrefix(name, "_") || strings.HasSuffix(name, "_") {
		return fmt.Errorf("%q must not contain \"__\" or start or end with '_' (\"__\" separates server and tool)", name)
	}
	return nil
}

// parseSafety parses a safety class; empty means sensitive.
func parseSafety(s string) (tools.Safety, error) {
	if s == "" {
		return tools.Sensitive, nil
	}
	return tools.ParseSafety(strings.ToLower(strings.TrimSpace(s)))
}

func canonicalHeader(k string) string {
	k = strings.TrimSpace(k)
	if k == "" {
		return ""
	}
	parts := strings.Split(strings.ToLower(k), "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// redactURL drops the user info, query and fragment of a URL: they may carry credentials.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.Fragment = ""
	return u.String()
}
