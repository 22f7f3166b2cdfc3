package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as "30s", "5m", "24h" in YAML and the environment.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func parseDuration(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		// Whole days ("90d"), for retention periods.
		n, derr := strconv.Atoi(days)
		v, err = time.Duration(n)*24*time.Hour, derr
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write it like 30s, 5m or 24h (or 7d for days)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative: durations must be positive", s)
	}
	return v, nil
}

// Config is the whole gateway configuration: YAML, then environment overrides, then defaults.
// Every scalar key can be overridden by ECHOGATE_<PATH> (e.g. ECHOGATE_AGENT_MAX_ITERATIONS);
// the well-known variables of SPEC.md (OPENAI_API_KEY, SLACK_BOT_TOKEN, …) work too.
type Config struct {
	HTTP       HTTPConfig          `yaml:"http"`
	DataDir    string              `yaml:"data_dir" env:"ECHOGATE_DATA_DIR"`
	Database   DatabaseConfig      `yaml:"database"`
	Models     ModelsConfig        `yaml:"models"`
	Embeddings EmbeddingsConfig    `yaml:"embeddings"`
	Agent      AgentConfig         `yaml:"agent"`
	Slack      SlackConfig         `yaml:"slack"`
	Discord    DiscordConfig       `yaml:"discord"`
	Approval   ApprovalConfig      `yaml:"approval"`
	Tools      map[string]ToolConf `yaml:"tools" envmap:"lower"`
	Budgets    BudgetsConfig       `yaml:"budgets"`
	MCP        MCPConfig           `yaml:"mcp"`
	Log        LogConfig           `yaml:"log"`
	Memory     MemoryConf          `yaml:"memory"`
	Knowledge  KnowledgeConf       `yaml:"knowledge"`
	Tracing    TracingConf         `yaml:"tracing"`
	Files      FilesConf           `yaml:"files"`   // chat attachments (files_wiring.go)
	Storage    StorageConf         `yaml:"storage"` // durability and retention (storage_wiring.go)
	Runtime    RuntimeConf         `yaml:"runtime"` // Go runtime of serve (runtime_wiring.go)
	// Access and Agents: who may use the gateway, and a profile per place (agents_config.go).
	Access AccessConf         `yaml:"access"`
	Agents []AgentProfileConf `yaml:"agents"`
	// Skills: Agent Skills folders the agents may load (skills_wiring.go).
	Skills SkillsConf `yaml:"skills"`
	// Scheduler and Schedules: scheduled work (schedule_config.go).
	Scheduler SchedulerConf  `yaml:"scheduler"`
	Schedules []ScheduleConf `yaml:"schedules"`
	// Replicas: how many gateway processes share the database (docs/scaling.md).
	Replicas ReplicasConf `yaml:"replicas"`
	// source is where the configuration was read from, for a reload (reload.go).
	source configSource
	// warnings are what loading found doubtful but not wrong (config_envwarn.go), logged at start.
	warnings []string
}

type HTTPConfig struct {
	Addr string `yaml:"addr" env:"ECHOGATE_HTTP_ADDR"`
	// AuthToken protects the console and admin API; required when Addr is not loopback.
	AuthToken string `yaml:"auth_token" env:"ECHOGATE_HTTP_AUTH_TOKEN"`
	// AllowedHosts are the extra Host names the server answers (besides its address and
	// loopback names): the names a reverse proxy or users reach it by. "*.example.com" matches
	// subdomains. Other names get 421, which stops DNS rebinding.
	AllowedHosts []string `yaml:"allowed_hosts" env:"ECHOGATE_HTTP_ALLOWED_HOSTS"`
	// IdleTimeout closes a keep-alive connection that carried no request for that long
	// (default 30s). Behind a proxy that reuses idle connections to the gateway, set it above
	// the proxy's own idle timeout (AWS ALB: 60s), so the proxy always closes first.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// ShutdownDelay is how long serve keeps serving after SIGTERM with /readyz answering 503,
	// before it stops taking new work and drains (default 0): long enough for a load balancer
	// to see the failed readiness probe and stop sending (Kubernetes: a few probe periods).
	ShutdownDelay Duration `yaml:"shutdown_delay"`
	// MetricsToken also admits a request to /metrics (and nothing else), for a scraper that should
	// not hold AuthToken. /metrics takes AuthToken too.
	MetricsToken string `yaml:"metrics_token" env:"ECHOGATE_HTTP_METRICS_TOKEN"`
	// BodyTimeout is how long a request's body may take to arrive once its headers did (default
	// 30s); a slower one is answered 408 and its connection closed.
	BodyTimeout Duration `yaml:"body_timeout"`
	// MaxConnections caps the open connections (default 4096); past it, new ones wait in the
	// listen backlog until one closes.
	MaxConnections int `yaml:"max_connections"`
	// PublicURL is the address people's browsers reach the gateway at (https://gateway.example.com),
	// needed behind a reverse proxy: OAuth logins of MCP servers are sent back to
	// PublicURL/oauth/callback. Empty: http://ADDR (a loopback name for an unspecified host).
	PublicURL string `yaml:"public_url" env:"ECHOGATE_HTTP_PUBLIC_URL"`
}

type DatabaseConfig struct {
	URL string `yaml:"url" env:"DATABASE_URL"`
	// Pooler is what sits between echogate and PostgreSQL: none (direct, or a pooler in session
	// mode; the default) or transaction (PgBouncer pool_mode = transaction, a managed database's
	// transaction proxy): no named prepared statements, session locks as lease rows.
	// Env ECHOGATE_DATABASE_POOLER.
	Pooler string `yaml:"pooler"`
	// LeaseTTL: through a transaction pooler, how long a session's lease outlives its replica
	// (renewed every third of it while the turn runs); a killed replica's sessions move to
	// another after at most this. 0 means 10s. Env ECHOGATE_DATABASE_LEASE_TTL.
	LeaseTTL Duration `yaml:"lease_ttl"`
}

type ModelsConfig struct {
	Default   string               `yaml:"default" env:"ECHOGATE_MODEL"`
	Providers []ProviderConfig     `yaml:"providers"`
	Routes    []RouteConfig        `yaml:"routes"`
	Prices    map[string]PriceConf `yaml:"prices"`
	// ContextWindow per model, tokens.
	ContextWindows map[string]int `yaml:"context_windows"`
	// Vision lists the models that accept images; unset means the built-in list of
	// vision-capable families (files_wiring.go).
	Vision []string `yaml:"vision"`
}

type ProviderConfig struct {
	Name    string   `yaml:"name"`
	BaseURL string   `yaml:"base_url"`
	APIKey  string   `yaml:"api_key"`
	Models  []string `yaml:"models"`
	// MaxRetries before the first token on 429/5xx/connection errors; 0 means 3, -1 none.
	MaxRetries int      `yaml:"max_retries"`
	Timeout    Duration `yaml:"timeout"`
	// PromptCacheKey: send prompt_cache_key (a digest of the session) so the turns of a
	// conversation share the provider's prompt cache: "" (only to api.openai.com), on, off.
	PromptCacheKey string `yaml:"prompt_cache_key"`
}

type RouteConfig struct {
	Name     string   `yaml:"name"`
	When     string   `yaml:"when"` // default | long | code | attachments | tools
	Model    string   `yaml:"model"`
	Fallback []string `yaml:"fallback"`
}

type PriceConf struct {
	InputPerMTok       float64 `yaml:"input_per_mtok"`
	OutputPerMTok      float64 `yaml:"output_per_mtok"`
	CachedInputPerMTok float64 `yaml:"cached_input_per_mtok"`
}

type EmbeddingsConfig struct {
	Model      string `yaml:"model" env:"ECHOGATE_EMBEDDING_MODEL"`
	Dimensions int    `yaml:"dimensions"`
}

type AgentConfig struct {
	SystemPrompt    string   `yaml:"system_prompt"`
	MaxIterations   int      `yaml:"max_iterations"`
	MaxTokens       int      `yaml:"max_tokens"`
	TurnTimeout     Duration `yaml:"turn_timeout"`
	OnBusy          string   `yaml:"on_busy"`
	MailboxSize     int      `yaml:"mailbox_size"`
	HistoryMessages int      `yaml:"history_messages"`
	ToolTimeout     Duration `yaml:"tool_timeout"`
	DrainTimeout    Duration `yaml:"drain_timeout"`
	FallbackText    string   `yaml:"fallback_text"`
	// CompressThreshold is the fraction of the model's context window (models.context_windows)
	// at which older turns are summarized into a checkpoint; 0 means 0.8.
	CompressThreshold float64 `yaml:"compress_threshold"`
	// KeepTurns is how many of the latest user turns stay verbatim when compressing; 0 means 4.
	KeepTurns int `yaml:"keep_turns"`
	// ReplayAfter: with PostgreSQL, how long an unfinished event's claim must have gone without
	// its replica renewing it before another replica takes it over (default 1m).
	ReplayAfter Duration `yaml:"replay_after"`
	// MaxConcurrentTurnsPerUser caps one user's running turns across conversations (default 3,
	// -1 no cap); UserRate bounds how fast one user starts turns (peruser_config.go).
	MaxConcurrentTurnsPerUser int            `yaml:"max_concurrent_turns_per_user"`
	UserRate                  UserRateConfig `yaml:"user_rate"`
}

// ReplicasConf describes the deployment: start-up checks it against per-app platform limits.
type ReplicasConf struct {
	// Expected is the most gateway processes running at once on this configuration, counting
	// a rolling deploy's surge (Kubernetes: replicas + maxSurge, or the autoscaler's maximum);
	// default 1. Start-up warns when Slack's Socket Mode limit may be passed.
	Expected int `yaml:"expected" env:"ECHOGATE_REPLICAS_EXPECTED"`
}

type SlackConfig struct {
	BotToken       string `yaml:"bot_token" env:"SLACK_BOT_TOKEN"`
	AppToken       string `yaml:"app_token" env:"SLACK_APP_TOKEN"`
	SigningSecret  string `yaml:"signing_secret" env:"SLACK_SIGNING_SECRET"`
	APIURL         string `yaml:"api_url" env:"SLACK_API_URL"`
	RequireMention *bool  `yaml:"require_mention"`
	ReplyInThread  *bool  `yaml:"reply_in_thread"`
	// SocketConnections is how many Socket Mode connections each replica opens (default 1;
	// Slack allows 10 per app across all replicas).
	SocketConnections int `yaml:"socket_connections"`
	// Command is the app's slash command (as in the manifest); default /echogate.
	Command string `yaml:"command"`
	// ThreadHistory: earlier thread messages the model sees when first mentioned mid-thread
	// (default 20, -1 off); ThreadReadsPerMinute bounds conversations.replies for it (default 1).
	ThreadHistory        int     `yaml:"thread_history"`
	ThreadReadsPerMinute float64 `yaml:"thread_reads_per_minute"`
	// SuggestedPrompts are offered when a user starts an assistant thread, in the welcome of
	// the App Home Messages tab and on its Home tab (at most 4).
	SuggestedPrompts []SuggestedPromptConfig `yaml:"suggested_prompts"`
	// Channels overrides settings per Slack channel id: {C0123: {require_mention: false}}.
	Channels map[string]SlackChannelConf `yaml:"channels" envmap:""`
}

type SlackChannelConf struct {
	RequireMention *bool `yaml:"require_mention"`
}

type SuggestedPromptConfig struct {
	Title   string `yaml:"title"`
	Message string `yaml:"message"`
}

type DiscordConfig struct {
	Token      string `yaml:"token" env:"DISCORD_BOT_TOKEN"`
	APIURL     string `yaml:"api_url" env:"DISCORD_API_URL"`
	ShardID    int    `yaml:"shard_id"`
	ShardCount int    `yaml:"shard_count"`
	// Shards: "" (default) runs shard_id of shard_count on every replica; "auto" shares the
	// shard_count shards out between the replicas through leases in the store, one replica
	// per shard (channels/discord/shards.go).
	Shards         string `yaml:"shards"`
	RequireMention *bool  `yaml:"require_mention"`
	// MessageContent: auto | on | off; auto asks for the privileged MESSAGE_CONTENT intent only
	// when some place answers without a mention (require_mention: false).
	MessageContent string `yaml:"message_content"`
	// ThreadHistory: earlier messages of a thread or reply the model sees (default 20, -1 off).
	ThreadHistory int `yaml:"thread_history"`
	// CommandGuilds registers /echogate in these guilds instead of globally.
	CommandGuilds []string `yaml:"command_guilds"`
}

// messageContent resolves discord.message_content: auto is on only when guild messages are
// answered without a mention somewhere.
func (d DiscordConfig) messageContent() bool {
	switch d.MessageContent {
	case "on":
		return true
	case "off":
		return false
	}
	return d.RequireMention != nil && !*d.RequireMention
}

type ApprovalConfig struct {
	Approvers []string `yaml:"approvers" env:"ECHOGATE_APPROVERS"`
	Timeout   Duration `yaml:"timeout"`
	OnTimeout string   `yaml:"on_timeout"`
	// CheckInterval is how often expired approvals are looked for (default 30s).
	CheckInterval Duration `yaml:"check_interval"`
	// Unattended: what a sensitive tool call in a scheduled run does: deny (default) or
	// prompt (the approval prompt is posted to the job's delivery place).
	Unattended string `yaml:"unattended"`
}

type ToolConf struct {
	Approval     string `yaml:"approval"`      // allow | ask | deny
	AllowPrivate bool   `yaml:"allow_private"` // http_fetch
	// AllowHosts and DenyHosts are http_fetch's host lists: bare hosts (subdomains included) or
	// globs (*.example.com); deny wins; an empty allow list allows any public host.
	AllowHosts []string `yaml:"allow_hosts"`
	DenyHosts  []string `yaml:"deny_hosts"`
	Allowed    []string `yaml:"allowed"` // run_command
	// AllowPaths are absolute directories run_command's arguments may name besides its working
	// directory; Env names variables of the gateway's environment passed on to its commands.
	AllowPaths []string `yaml:"allow_paths"`
	Env        []string `yaml:"env"`
	Timeout    Duration `yaml:"timeout"`
	Enabled    *bool    `yaml:"enabled"`
	// ApproversOnly: the tool's calls need an approver's decision (as a destructive tool's);
	// the requester's own approval does not count.
	ApproversOnly bool `yaml:"approvers_only"`
}

type BudgetsConfig struct {
	PerTurnUSD       float64 `yaml:"per_turn_usd"`
	PerSessionUSD    float64 `yaml:"per_session_usd"`
	PerUserDayUSD    float64 `yaml:"per_user_day_usd"`
	PerChannelDayUSD float64 `yaml:"per_channel_day_usd"`
	PerDayUSD        float64 `yaml:"per_day_usd"`
	PerMonthUSD      float64 `yaml:"per_month_usd"`
}

type MCPConfig struct {
	Servers []MCPServer `yaml:"servers"`
	// ReadyTimeout bounds how long chat and serve's start-up replay wait for the servers to
	// connect before turns run without the late ones' tools; 0 means 10s.
	ReadyTimeout Duration `yaml:"ready_timeout"`
	// ElicitTimeout bounds how long a server's question during a tool call waits for the
	// person's answer before it is declined; 0 means 5m.
	ElicitTimeout Duration `yaml:"elicit_timeout"`
}

type MCPServer struct {
	Name    string            `yaml:"name"`
	Command string            `yaml:"command"` // stdio server
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Dir     string            `yaml:"dir"`
	URL     string            `yaml:"url"` // streamable HTTP server
	Headers map[string]string `yaml:"headers"`
	Safety  string            `yaml:"safety"` // default sensitive
	// ToolSafety overrides the safety class per tool (bare tool name → safe|sensitive|destructive).
	ToolSafety  map[string]string `yaml:"tool_safety"`
	CallTimeout Duration          `yaml:"call_timeout"`
	MaxOutput   int               `yaml:"max_output"`
	// AllowChannels / AllowUsers restrict who may use the server's tools ("slack:C123",
	// "slack:*", "discord:U…"); empty means everyone.
	AllowChannels []string `yaml:"allow_channels"`
	AllowUsers    []string `yaml:"allow_users"`
	// Auth is "" (none, or static headers), "oauth" (one grant for the gateway, made by
	// `echogate mcp login NAME`) or "oauth_per_user" (each chat user logs in with their own
	// account); url servers only. Grants are sealed with ECHOGATE_SECRET_KEY in the store.
	Auth              string   `yaml:"auth"`
	ClientID          string   `yaml:"client_id"`     // pre-registered client (else CIMD, else dynamic registration)
	ClientSecret      string   `yaml:"client_secret"` // with client_id, for a confidential client
	ClientMetadataURL string   `yaml:"client_metadata_url"`
	Scopes            []string `yaml:"scopes"`
}

type LogConfig struct {
	Level  string `yaml:"level" env:"ECHOGATE_LOG_LEVEL"`
	Format string `yaml:"format" env:"ECHOGATE_LOG_FORMAT"`
}

func (c *Config) applyDefaults() {
	if c.HTTP.Addr == "" {
		c.HTTP.Addr = "127.0.0.1:8080"
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.Models.Default == "" {
		c.Models.Default = "gpt-4o-mini"
	}
	for i := range c.Models.Providers {
		p := &c.Models.Providers[i]
		if p.Name == "" {
			p.Name = fmt.Sprintf("provider%d", i+1)
		}
		if p.BaseURL == "" && p.APIKey != "" {
			p.BaseURL = defaultBase
		}
	}
	if c.Embeddings.Model == "" {
		c.Embeddings.Model = "text-embedding-3-small"
	}
	if c.Embeddings.Dimensions == 0 {
		c.Embeddings.Dimensions = 1536
	}
	if c.Agent.OnBusy == "" {
		c.Agent.OnBusy = "queue"
	}
	if c.Approval.Unattended == "" {
		c.Approval.Unattended = "deny"
	}
	if c.Approval.OnTimeout == "" {
		c.Approval.OnTimeout = "deny"
	}
	if c.Discord.ShardCount == 0 {
		c.Discord.ShardCount = 1
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
	c.Storage.applyDefaults()
}

// demoMode reports whether no model endpoint is configured: the offline demo model answers.
func (c *Config) demoMode() bool { return len(c.Models.Providers) == 0 }

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MemoryConf is the `memory:` section: long-term memory and its consolidation worker. Zero values
// mean the defaults documented in echogate.example.yaml; validated by validateMemKB.
type MemoryConf struct {
	Enabled             *bool   `yaml:"enabled"`              // default false (opt-in)
	ChannelMemories     bool    `yaml:"channel_memories"`     // include the channel's shared memories
	BudgetTokens        int     `yaml:"budget_tokens"`        // snapshot size; default 600
	PinnedLimit         int     `yaml:"pinned_limit"`         // default 20
	RelevantLimit       int     `yaml:"relevant_limit"`       // default 8
	MinSimilarity       float64 `yaml:"min_similarity"`       // default 0.25
	DuplicateSimilarity float64 `yaml:"duplicate_similarity"` // default 0.9
	Consolidation       struct {
		Enabled      *bool    `yaml:"enabled"`       // default true
		Model        string   `yaml:"model"`         // default models.default
		Debounce     Duration `yaml:"debounce"`      // default 2m
		MaxDelay     Duration `yaml:"max_delay"`     // default 15m
		PollInterval Duration `yaml:"poll_interval"` // default 10s
		Lease        Duration `yaml:"lease"`         // default 5m
		MaxAttempts  int      `yaml:"max_attempts"`  // default 5
	} `yaml:"consolidation"`
}

// KnowledgeConf is the `knowledge:` section.
type KnowledgeConf struct {
	Enabled       *bool   `yaml:"enabled"`        // default false (opt-in)
	BudgetTokens  int     `yaml:"budget_tokens"`  // passages per turn, in tokens; default 1200
	TopK          int     `yaml:"top_k"`          // default 4
	ChunkSize     int     `yaml:"chunk_size"`     // bytes; default 1200
	ChunkOverlap  int     `yaml:"chunk_overlap"`  // bytes; default 150
	MinSimilarity float64 `yaml:"min_similarity"` // default 0.2
}

// TracingConf is the `tracing:` section: OpenTelemetry traces over OTLP/HTTP, off unless an
// endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT (tracing_wiring.go).
type TracingConf struct {
	Endpoint    string            `yaml:"endpoint"`     // collector base URL, e.g. http://otel-collector:4318
	Headers     map[string]string `yaml:"headers"`      // sent with every export (API keys)
	Insecure    bool              `yaml:"insecure"`     // plain HTTP for an endpoint without a scheme
	SampleRatio float64           `yaml:"sample_ratio"` // fraction of turns traced; 0 means 1
	ServiceName string            `yaml:"service_name"` // default OTEL_SERVICE_NAME, else echogate
	getenv      func(string) string
}
