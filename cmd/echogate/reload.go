package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/echogate/echogate/pipeline"
)

// configSource is where a configuration was read from, so serve can read it again.
type configSource struct {
	path   string // "" when no file was read
	getenv func(string) string
	// environ lists the environment's names for the map sections' variables (nil: not read)
	environ func() []string
	origins keyOrigins // where each key was set, to locate a check's error made later (config_where.go)
	stamp   fileStamp  // the file's version as it was read, so an edit made before the watcher starts is seen
}

// agentCatalog returns what cfg's agents are checked against: this core's tools and models.
func (c *core) agentCatalog(cfg *Config) agentCatalog {
	cat := agentCatalog{ledger: c.store, prices: c.models.prices}
	for _, s := range c.tools.Specs() {
		cat.tools = append(cat.tools, s.Name)
	}
	sort.Strings(cat.tools)
	for _, s := range c.cfg.MCP.Servers { // the running ones: servers are connected at start only
		cat.mcpServers = append(cat.mcpServers, s.Name)
	}
	for _, r := range cfg.Models.Routes {
		cat.routes = append(cat.routes, r.Name)
	}
	known := cfg.configModels()
	if rt := c.models.router; rt != nil {
		// The running router's models are fixed at start: a model new to it needs a restart.
		cat.routes = slices.DeleteFunc(cat.routes, func(n string) bool { return !slices.Contains(rt.Routes(), n) })
		cat.knownModel = func(m string) bool { return (known == nil || known(m)) && rt.Known(m) }
		cat.modelFor = c.models.modelFor
	} else if known != nil {
		cat.knownModel = known
	}
	return cat
}

// wireAgents sets the pipeline configuration's agents and access rules from cfg.
func (c *core) wireAgents(pcfg *pipeline.Config) error {
	agents, err := c.cfg.buildAgents(c.agentCatalog(c.cfg))
	if err != nil {
		return err
	}
	rules := c.cfg.accessRules()
	pcfg.Agents, pcfg.Access = agents, &rules
	if um := c.cfg.unmappedMentions(); len(um) > 0 {
		c.log.Warn("agents: require_mention applies only to Slack channels named by id (slack:C…); these places keep slack.require_mention / discord.require_mention",
			"places", strings.Join(um, ", "))
	}
	return nil
}

// errNoConfigFile: there is nothing to reload.
var errNoConfigFile = errors.New("no configuration file was read at start (--config, ECHOGATE_CONFIG or ./echogate.yaml): nothing to reload")

// reload reads the configuration file again (SIGHUP, or the file changed) and applies its `access:` and `agents:`
// atomically: the next event is checked against the new rules and served by the new
// profiles, running turns finish under the profile they started with. A file that does not
// load or validate, or that others may write (config_trust.go), is refused with the error and
// the running configuration stays. Other sections take effect at the next start.
func (c *core) reload(trigger string) error {
	src := c.cfg.source
	if src.path == "" {
		return errNoConfigFile
	}
	if err := checkConfigFile(src.path); err != nil { // config_trust.go
		return err
	}
	cfg, err := loadConfigFrom(src.path, src.getenv, src.environ)
	if err != nil {
		return err
	}
	agents, err := cfg.buildAgents(c.agentCatalog(cfg))
	if err != nil {
		return err
	}
	if err := c.pipeline.SetAgents(agents); err != nil {
		return err
	}
	c.pipeline.SetAccess(cfg.accessRules())
	c.reloadSkills(cfg)                            // skills_wiring.go
	if err := c.reloadSchedules(cfg); err != nil { // schedule_wiring.go
		return err
	}
	c.log.Info("configuration reloaded: access and agents applied (other settings take effect at the next start)",
		"file", src.path, "trigger", trigger, "agents", len(agents.List))
	return nil
}

// reloadPoll is how often serve looks at the configuration file's modification time and size:
// an edited file is reloaded like a SIGHUP.
const reloadPoll = 2 * time.Second

// fileStamp identifies one version of the configuration file.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime(), fi.Size()}
}

// watchReload reloads on SIGHUP, and when the configuration file changes, until ctx ends.
func (c *core) watchReload(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	path := c.cfg.source.path
	last := c.cfg.source.stamp
	tick := time.NewTicker(reloadPoll)
	defer tick.Stop()
	try := func(why string) {
		last = stampOf(path)
		if err := c.reload(why); err != nil {
			c.log.Error("configuration reload refused; the running configuration stays", "file", path, "trigger", why, "err", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			try("SIGHUP")
		case <-tick.C:
			if path != "" && stampOf(path) != last {
				try("file changed")
			}
		}
	}
}
