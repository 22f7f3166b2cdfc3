package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/agent/provider/demo"
	"github.com/echogate/echogate/agent/provider/openai"
	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/internal/names"
	"github.com/echogate/echogate/internal/redact"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/sqlite"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
	"github.com/echogate/echogate/tools/mcp"
	"github.com/echogate/echogate/tools/skills"
)

// store is what the gateway needs of a storage backend.
type store interface {
	pipeline.Store
	Migrate(ctx context.Context) error
	Ping(ctx context.Context) error
	Close() error
}

var (
	_ store = (*sqlite.Store)(nil)
	_ store = (*postgres.Store)(nil)
)

// openStore opens and migrates the configured store: PostgreSQL when database.url is set, else
// SQLite in the data dir.
func openStore(ctx context.Context, cfg *Config, log *slog.Logger) (store, string, error) {
	if cfg.Database.URL != "" {
		s, err := postgres.New(postgres.Config{URL: cfg.Database.URL, Pooler: cfg.Database.Pooler, LeaseTTL: time.Duration(cfg.Database.LeaseTTL)}, log)
		if err != nil {
			return nil, "", err
		}
		if err := s.Open(ctx); err != nil {
			return nil, "", fmt.Errorf("open PostgreSQL (DATABASE_URL): %w", err)
		}
		return s, "postgres", nil
	}
	path := filepath.Join(cfg.DataDir, "echogate.db")
	s, err := sqlite.New(sqlite.Config{Path: path, Synchronous: cfg.Storage.Sync}, log)
	if err != nil {
		return nil, "", err
	}
	if err := s.Open(ctx); err != nil {
		return nil, "", fmt.Errorf("open SQLite at %s (ECHOGATE_DATA_DIR): %w", path, err)
	}
	return s, "sqlite", nil
}

// core is what every command that runs turns shares: store, model, tools, pipeline.
type core struct {
	cfg     *Config
	log     *slog.Logger
	store   store
	backend string
	model   agent.Model
	models  *modelStack
	tools   *tools.Registry
	mcp     *mcp.Manager  // nil without mcp.servers
	mcpAuth mcpAuthorizer // sends per-person MCP login links (mcp_grants.go)
	// mcpAsk puts MCP servers' questions to people (mcp_elicit.go).
	mcpAsk mcpElicitor
	// workers are further background loops (consolidation, …) run by startBackground.
	workers  map[string]func(context.Context) error
	memkb    *memkb // long-term memory and knowledge base (memory_wiring.go)
	metrics  *metrics.Metrics
	pipeline *pipeline.Pipeline
	tracing  *tracingWiring  // nil unless tracing is configured (tracing_wiring.go)
	skills   *skills.Library // nil unless skills are installed or skills.dirs set (skills_wiring.go)
	// skillProblems are the problems of the last skills load (start or reload), for the console.
	skillProblems atomic.Pointer[[]skills.Problem]
	// sched is scheduled work (schedule_wiring.go); schedClock its clock (nil: the system's).
	sched      *scheduler
	schedClock schedule.Clock
	webhookTLS *tls.Config // a test's (withWebhookTLS); nil: the system's roots
	// names are the display names seen on inbound events (names_wiring.go); the pipeline's
	// own text names people with them.
	names *names.Directory
	// redactor masks secrets in what is posted (the pipeline's) and in stored text shown again.
	redactor *redact.Redactor
}

// newCore opens the store (migrating it), makes the model and the tools; the pipeline is made by
// the caller once the repliers are known.
func newCore(ctx context.Context, cfg *Config, log *slog.Logger) (*core, error) {
	c := &core{cfg: cfg, log: log, metrics: metrics.New(), names: names.New(0)}
	var err error
	c.store, c.backend, err = openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if err := c.store.Migrate(ctx); err != nil {
		c.store.Close()
		return nil, fmt.Errorf("migrate %s store: %w", c.backend, err)
	}
	c.models, err = newModelStack(cfg, log, c.metrics, c.store, recordBackground(c.store, log))
	if err != nil {
		c.store.Close()
		return nil, err
	}
	c.model = c.models.model
	set, sps := loadSkills(cfg, log, "start") // skills_wiring.go
	c.skillProblems.Store(&sps)
	c.tools, err = newTools(cfg, log, c.metrics, skillScripts(cfg, set)...)
	if err == nil && skillsWanted(cfg, set) {
		c.skills = skills.NewLibrary(set)
		err = addSkillTools(c.tools, c.skills)
	}
	if err != nil {
		c.store.Close()
		return nil, err
	}
	c.mcp, err = newMCP(cfg, c.tools, log, c.metrics, c.store, c.mcpAuth.authorize, c.mcpAsk.elicit)
	if err != nil {
		c.store.Close()
		return nil, fmt.Errorf("mcp.servers: %w", err)
	}
	if c.memkb, err = c.newMemKB(ctx); err != nil {
		c.store.Close()
		return nil, err
	}
	c.addRetention()
	return c, nil
}

func (c *core) Close() {
	c.stopTracing()
	c.store.Close()
}

// newPipeline wires the pipeline with the given repliers.
func (c *core) newPipeline(repliers map[string]pipeline.Replier) error {
	cfg := c.cfg
	pcfg := pipelineConfig(cfg, c.backend)
	c.redactor = newRedactor(cfg, os.Environ()) // redact_wiring.go
	deps := pipeline.Deps{
		Store:     c.store,
		Model:     c.model,
		Tools:     c.tools,
		Repliers:  repliers,
		Log:       c.log,
		Metrics:   c.metrics,
		Pricer:    c.models.prices,
		Budget:    c.models.tracker,
		Spend:     c.models.tracker,
		Compactor: c.compactor(),
		Context:   c.memkb.contextProviders(),
		AfterTurn: c.memkb.afterTurn(c.log),
		UsageObservers: []func(echogate.UsageRecord){
			c.models.tracker.Observe,
		},
		Redactor: c.redactor,
		Names:    c.names,
	}
	if c.skills != nil {
		deps.Skills = c.skills
		pcfg.SkillScripts = cfg.Skills.AllowScripts
		pcfg.SkillScriptPaths = skillScripts(cfg, c.skills.Skills())
	}
	if c.models.router != nil {
		deps.Models = c.models.router
	}
	if c.mcp != nil {
		deps.ToolFilter = c.mcp.ToolFilter()
		deps.MCPGrants = c.mcpGrants() // mcp_grants.go
		c.mcpAuth.wire(c.mcp, repliers, c.log)
	}
	if err := c.wireSchedule(&deps, repliers); err != nil { // schedule_wiring.go
		return err
	}
	if err := c.wireFiles(&deps, repliers); err != nil {
		return err
	}
	if err := c.wireTracing(&deps); err != nil {
		return err
	}
	// After every tool is registered (read_file comes with wireFiles): agents are checked against them.
	if err := c.wireAgents(&pcfg); err != nil {
		return err
	}
	p, err := pipeline.New(pcfg, deps)
	if err != nil {
		return err
	}
	c.pipeline = p
	c.mcpAsk.wire(p)
	return nil
}

// newModel returns the OpenAI-compatible provider, or the offline demo model when no key and no
// base URL are configured.
func newModel(cfg *Config, log *slog.Logger) (agent.Model, error) {
	if cfg.demoMode() {
		log.Warn("DEMO MODE: no OPENAI_API_KEY or OPENAI_BASE_URL set; an offline demo model answers (every reply is labelled)")
		m, err := demo.New(demo.Config{}, log.With("model", "demo"))
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	p := cfg.Models.Providers[0]
	m, err := openai.New(openai.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, MaxRetries: p.MaxRetries, Timeout: time.Duration(p.Timeout), PromptCacheKey: p.PromptCacheKey}, log.With("provider", p.Name))
	if err != nil {
		return nil, fmt.Errorf("models.providers[0] (%s): %w", p.Name, err)
	}
	return m, nil
}

// newTools builds the built-in tools from config, each behind a circuit breaker. scripts are
// skills' scripts run_command may run besides tools.run_command.allowed (skills.allow_scripts).
func newTools(cfg *Config, log *slog.Logger, m *metrics.Metrics, scripts ...string) (*tools.Registry, error) {
	var ts []tools.Tool
	add := func(t tools.Tool, err error) error {
		if err != nil {
			return err
		}
		ts = append(ts, t)
		return nil
	}
	enabled := func(name string, def bool) bool {
		if c, ok := cfg.Tools[name]; ok && c.Enabled != nil {
			return *c.Enabled
		}
		return def
	}
	if enabled("current_time", true) {
		if err := add(builtin.NewCurrentTime(builtin.CurrentTimeConfig{})); err != nil {
			return nil, fmt.Errorf("tools.current_time: %w", err)
		}
	}
	if enabled("http_fetch", true) {
		fc := cfg.Tools["http_fetch"]
		if err := add(builtin.NewHTTPFetch(builtin.HTTPFetchConfig{AllowPrivate: fc.AllowPrivate, AllowHosts: fc.AllowHosts, DenyHosts: fc.DenyHosts,
			Timeout: time.Duration(fc.Timeout)})); err != nil {
			return nil, fmt.Errorf("tools.http_fetch: %w", err)
		}
	}
	if enabled("ask_user", true) {
		if err := add(builtin.NewAskUser(builtin.AskUserConfig{})); err != nil {
			return nil, fmt.Errorf("tools.ask_user: %w", err)
		}
	}
	if rc := cfg.Tools["run_command"]; len(rc.Allowed)+len(scripts) > 0 && enabled("run_command", true) {
		dir := filepath.Join(cfg.DataDir, "workspace")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("tools.run_command: create %s: %w", dir, err)
		}
		if err := add(builtin.NewRunCommand(builtin.RunCommandConfig{Allowed: append(slices.Clone(rc.Allowed), scripts...), Dir: dir, Timeout: time.Duration(rc.Timeout),
			AllowPaths: rc.AllowPaths, PassEnv: rc.Env})); err != nil {
			return nil, fmt.Errorf("tools.run_command: %w", err)
		}
	}
	onState := func(tool, from, to string) {
		log.Warn("tool circuit breaker changed state", "tool", tool, "from", from, "to", to)
		m.Breaker(tool, "tool", to)
	}
	reg, err := tools.NewRegistry()
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if err := reg.Add(tools.WithBreaker(t, tools.BreakerConfig{}, log, onState)); err != nil {
			return nil, err
		}
	}
	for name := range cfg.Tools {
		if _, ok := reg.Get(name); !ok && !isLaterTool(name) {
			log.Warn("tools: configuration names a tool that is not registered", "tool", name)
		}
	}
	return reg, nil
}

// isLaterTool names tools that register after start (MCP servers' tools contain "__") or
// elsewhere than newTools (attachments, plans, memory and knowledge, run_command without a list).
func isLaterTool(name string) bool {
	switch name {
	case "read_file", "plan", "remember", "recall", "forget", "knowledge_search", "run_command":
		return true
	}
	for i := 0; i+1 < len(name); i++ {
		if name[i] == '_' && name[i+1] == '_' {
			return true
		}
	}
	return false
}

var errUsage = errors.New("usage")

func newPricer(prices map[string]PriceConf) cost.Table {
	t := cost.Table{}
	for name, p := range prices {
		t[name] = cost.Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok, CachedInputPerMTok: p.CachedInputPerMTok}
	}
	return t
}

// startBackground starts the core's background workers (MCP server supervisors, and whatever
// else registers in c.workers) and returns a function that stops them and waits until they
// have exited.
func (c *core) startBackground(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	run := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("background worker stopped", "worker", name, "err", err)
			}
		}()
	}
	if c.mcp != nil {
		run("mcp", c.mcp.Run)
	}
	for name, fn := range c.workers {
		run(name, fn)
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
