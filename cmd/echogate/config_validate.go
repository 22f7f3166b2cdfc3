package main

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/echogate/echogate/channels/web"
)

// validate checks the whole configuration; the first problem is returned as a *ConfigError naming
// the key and the fix.
func (c *Config) validate() error {
	for _, check := range []func() error{
		c.validateHTTP,
		c.validateProviders,
		c.validateAgentLoop,
		c.validatePlatforms,
		c.validatePolicy,
		c.validateMCPAndLog,
		c.Tracing.validate, c.Storage.validate, c.Runtime.validate, c.validateAgentsAccess, c.Skills.validate,
		c.validateSchedules,
		c.validateAgentNames, // agents_config.go
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// badKey is the error of one configuration key: key names it, msg (a format) says what is wrong
// and how to fix it.
func badKey(key, msg string, args ...any) error {
	return &ConfigError{Key: key, Msg: fmt.Sprintf(msg, args...)}
}

// validateHTTP checks http.* and database.url.
func (c *Config) validateHTTP() error {
	if _, _, err := net.SplitHostPort(c.HTTP.Addr); err != nil {
		return badKey("http.addr", "%q is not host:port (e.g. 127.0.0.1:8080)", c.HTTP.Addr)
	}
	if _, err := web.NewHostPolicy(c.HTTP.Addr, c.HTTP.AllowedHosts); err != nil {
		return badKey("http.allowed_hosts", "%v", err)
	}
	if c.HTTP.AuthToken == "" {
		if !isLoopbackAddr(c.HTTP.Addr) {
			return badKey("http.auth_token", "http.addr %s is reachable from other machines: set http.auth_token (ECHOGATE_HTTP_AUTH_TOKEN) to protect the console and admin API", c.HTTP.Addr)
		}
		if h := firstRemoteHost(c.HTTP.AllowedHosts); h != "" {
			return badKey("http.auth_token", "http.allowed_hosts names %q, so the server answers requests a proxy forwards from other machines: set http.auth_token (ECHOGATE_HTTP_AUTH_TOKEN) to protect the console and admin API", h)
		}
	}
	if c.HTTP.ShutdownDelay < 0 {
		return badKey("http.shutdown_delay", "%s is negative: give how long to keep serving after SIGTERM with readiness false, e.g. 5s (0: none)", time.Duration(c.HTTP.ShutdownDelay))
	}
	if c.HTTP.BodyTimeout < 0 {
		return badKey("http.body_timeout", "%s is negative: give how long a request body may take to arrive, e.g. 30s", time.Duration(c.HTTP.BodyTimeout))
	}
	if c.HTTP.MaxConnections < 0 {
		return badKey("http.max_connections", "%d is negative: give the most connections the server holds at once, e.g. 4096", c.HTTP.MaxConnections)
	}
	if u := c.Database.URL; u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "postgres" && pu.Scheme != "postgresql") {
			return badKey("database.url", "DATABASE_URL must be a postgres://user:pass@host:5432/db URL, or empty for the embedded SQLite store")
		}
	}
	switch c.Database.Pooler {
	case "", "none", "transaction":
	default:
		return badKey("database.pooler", "%q is not a pooler mode: use none (direct, or a pooler in session mode) or transaction (PgBouncer pool_mode = transaction)", c.Database.Pooler)
	}
	if c.Database.Pooler == "transaction" && c.Database.URL == "" {
		return badKey("database.pooler", "transaction needs database.url (DATABASE_URL): the embedded SQLite store has no pooler")
	}
	if d := time.Duration(c.Database.LeaseTTL); d < 0 || d > 0 && d < time.Second {
		return badKey("database.lease_ttl", "%s: give how long a dead replica's session leases last, 1s or more (default 10s)", d)
	}
	return nil
}

// firstRemoteHost returns the first name of http.allowed_hosts that is not a loopback name or
// address: a name other machines reach the server by. "" when there is none.
func firstRemoteHost(hosts []string) string {
	for _, h := range hosts {
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(h), "["), "]")
		if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() || ip == nil && web.IsLoopbackName(name) {
			continue
		}
		return h
	}
	return ""
}

// validateProviders checks the providers' URLs, the models they serve and the prices.
func (c *Config) validateProviders() error {
	for i, p := range c.Models.Providers {
		if _, err := url.ParseRequestURI(p.BaseURL); err != nil || !strings.HasPrefix(p.BaseURL, "http") {
			return badKey(fmt.Sprintf("models.providers[%d].base_url", i), "%q is not an http(s) URL (OPENAI_BASE_URL, e.g. https://api.openai.com/v1)", p.BaseURL)
		}
	}
	if err := c.validateModels(); err != nil {
		return err
	}
	for name, p := range c.Models.Prices {
		if p.InputPerMTok < 0 || p.OutputPerMTok < 0 || p.CachedInputPerMTok < 0 {
			return badKey("models.prices."+name, "prices must not be negative")
		}
	}
	return nil
}

// validateAgentLoop checks embeddings.* and agent.*, and the context windows against the compression threshold.
func (c *Config) validateAgentLoop() error {
	if c.Embeddings.Dimensions < 1 || c.Embeddings.Dimensions > 16000 {
		return badKey("embeddings.dimensions", "%d is out of range (1 to 16000)", c.Embeddings.Dimensions)
	}
	if c.Agent.MaxIterations < 0 || c.Agent.MaxIterations > 100 {
		return badKey("agent.max_iterations", "%d is out of range (1 to 100)", c.Agent.MaxIterations)
	}
	if c.Agent.OnBusy != "queue" && c.Agent.OnBusy != "interrupt" {
		return badKey("agent.on_busy", "%q: use queue or interrupt", c.Agent.OnBusy)
	}
	if c.Agent.MailboxSize < 0 {
		return badKey("agent.mailbox_size", "must be positive")
	}
	if t := c.Agent.CompressThreshold; t < 0 || t > 1 {
		return badKey("agent.compress_threshold", "%g is out of range: use a fraction of the context window between 0 and 1, e.g. 0.8", t)
	}
	if err := c.Agent.validatePerUser(); err != nil {
		return err
	}
	if c.Agent.KeepTurns < 0 {
		return badKey("agent.keep_turns", "%d is negative: use how many of the latest user turns to keep verbatim, e.g. 4", c.Agent.KeepTurns)
	}
	thr := c.Agent.CompressThreshold
	if thr == 0 {
		thr = 0.8
	}
	for m, w := range c.Models.ContextWindows {
		if w < 1000 {
			return badKey("models.context_windows."+m, "%d tokens is too small: give the model's context window in tokens, e.g. 128000", w)
		}
		if float64(w)*thr < 256 {
			return badKey("agent.compress_threshold", "%g of %s's %d-token window leaves less than 256 tokens to compress into: raise it (e.g. 0.8)", thr, m, w)
		}
	}
	return nil
}

// validatePlatforms checks slack.* and discord.*.
func (c *Config) validatePlatforms() error {
	if c.Slack.BotToken != "" && !strings.HasPrefix(c.Slack.BotToken, "xoxb-") {
		return badKey("slack.bot_token", "SLACK_BOT_TOKEN must be a bot token starting with xoxb-")
	}
	if c.Slack.AppToken != "" && !strings.HasPrefix(c.Slack.AppToken, "xapp-") {
		return badKey("slack.app_token", "SLACK_APP_TOKEN must be an app-level token starting with xapp- (with connections:write)")
	}
	if (c.Slack.AppToken != "" || c.Slack.SigningSecret != "") && c.Slack.BotToken == "" {
		return badKey("slack.bot_token", "SLACK_BOT_TOKEN is required when SLACK_APP_TOKEN or SLACK_SIGNING_SECRET is set")
	}
	if c.Slack.BotToken != "" && c.Slack.AppToken == "" && c.Slack.SigningSecret == "" {
		return badKey("slack.bot_token", "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode, xapp-…) nor SLACK_SIGNING_SECRET (Events API, POST /slack/events) is: set one of them, or unset the bot token to run without Slack")
	}
	if c.Slack.APIURL != "" {
		if _, err := url.ParseRequestURI(c.Slack.APIURL); err != nil {
			return badKey("slack.api_url", "%q is not a URL (e.g. https://slack.com/api/)", c.Slack.APIURL)
		}
	}
	if c.Discord.APIURL != "" {
		if _, err := url.ParseRequestURI(c.Discord.APIURL); err != nil {
			return badKey("discord.api_url", "%q is not a URL (e.g. https://discord.com/api/v9/)", c.Discord.APIURL)
		}
	}
	switch c.Discord.MessageContent {
	case "", "auto", "on", "off":
	default:
		return badKey("discord.message_content", "%q: use auto, on or off", c.Discord.MessageContent)
	}
	if c.Slack.Command != "" && (!strings.HasPrefix(c.Slack.Command, "/") || strings.ContainsAny(c.Slack.Command, " \t")) {
		return badKey("slack.command", "%q: write the slash command as in the app manifest, e.g. /echogate", c.Slack.Command)
	}
	if c.Slack.SocketConnections < 0 || c.Slack.SocketConnections > 10 {
		return badKey("slack.socket_connections", "%d: give 1 to 10 Socket Mode connections per replica (Slack allows 10 per app)", c.Slack.SocketConnections)
	}
	if c.Replicas.Expected < 0 {
		return badKey("replicas.expected", "%d is negative: give the most gateway processes running at once, e.g. 3", c.Replicas.Expected)
	}
	if len(c.Slack.SuggestedPrompts) > 4 {
		return badKey("slack.suggested_prompts", "%d prompts: Slack shows at most 4", len(c.Slack.SuggestedPrompts))
	}
	for i, sp := range c.Slack.SuggestedPrompts {
		if strings.TrimSpace(sp.Title) == "" || strings.TrimSpace(sp.Message) == "" {
			return badKey("slack.suggested_prompts", "entry %d needs both title and message", i)
		}
	}
	if c.Discord.Shards != "" && c.Discord.Shards != "auto" {
		return badKey("discord.shards", "%q: leave it empty (every replica runs shard_id of shard_count) or write auto (the replicas share the shard_count shards out)", c.Discord.Shards)
	}
	if c.Discord.ShardCount < 1 || c.Discord.ShardID < 0 || c.Discord.ShardID >= c.Discord.ShardCount {
		return badKey("discord.shard_id", "shard %d of %d: shard_id must be from 0 to shard_count-1", c.Discord.ShardID, c.Discord.ShardCount)
	}
	return nil
}

// validatePolicy checks approval.*, tools.* and budgets.*.
func (c *Config) validatePolicy() error {
	for _, a := range c.Approval.Approvers {
		plat, id, ok := strings.Cut(a, ":")
		if !ok || id == "" || (plat != "slack" && plat != "discord" && plat != "web" && plat != "console") {
			return badKey("approval.approvers", "%q: write approvers as slack:U123, discord:123456 (platform:user id)", a)
		}
	}
	if c.Approval.OnTimeout != "deny" && c.Approval.OnTimeout != "wait" {
		return badKey("approval.on_timeout", "%q: use deny or wait", c.Approval.OnTimeout)
	}
	names := make([]string, 0, len(c.Tools))
	for n := range c.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch a := c.Tools[n].Approval; a {
		case "", "allow", "ask", "deny":
		default:
			return badKey("tools."+n+".approval", "%q: use allow, ask or deny", a)
		}
	}
	b := c.Budgets
	for k, v := range map[string]float64{"per_turn_usd": b.PerTurnUSD, "per_session_usd": b.PerSessionUSD, "per_user_day_usd": b.PerUserDayUSD,
		"per_channel_day_usd": b.PerChannelDayUSD, "per_day_usd": b.PerDayUSD, "per_month_usd": b.PerMonthUSD} {
		if v < 0 {
			return badKey("budgets."+k, "must not be negative (0 means no limit)")
		}
	}
	return nil
}

// validateMCPAndLog checks mcp.servers and log.*.
func (c *Config) validateMCPAndLog() error {
	seen := map[string]bool{}
	for i, s := range c.MCP.Servers {
		key := fmt.Sprintf("mcp.servers[%d]", i)
		if s.Name == "" || strings.Contains(s.Name, "__") {
			return badKey(key+".name", "each MCP server needs a name without \"__\"")
		}
		if seen[s.Name] {
			return badKey(key+".name", "%q is used twice", s.Name)
		}
		seen[s.Name] = true
		if (s.Command == "") == (s.URL == "") {
			return badKey(key, "set either command (stdio server) or url (streamable HTTP server)")
		}
		switch s.Safety {
		case "", "safe", "sensitive", "destructive":
		default:
			return badKey(key+".safety", "%q: use safe, sensitive or destructive", s.Safety)
		}
		if err := c.validateMCPAuth(key, s); err != nil {
			return err
		}
	}
	if err := c.validateMCPOAuth(); err != nil {
		return err
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "warning", "error":
	default:
		return badKey("log.level", "%q: use debug, info, warn or error (ECHOGATE_LOG_LEVEL)", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		return badKey("log.format", "%q: use text or json (ECHOGATE_LOG_FORMAT)", c.Log.Format)
	}
	return nil
}
