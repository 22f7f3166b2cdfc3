package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/agent/provider/openai"
	"github.com/echogate/echogate/agent/router"
	"github.com/echogate/echogate/internal/metrics"
)

// providerModels opens models.providers and maps every model name to the provider that serves
// it: the first provider listing it, and the first provider for a model named by the default,
// an agent or a route that no provider lists.
func providerModels(cfg *Config, log *slog.Logger) (map[string]agent.Model, error) {
	models := map[string]agent.Model{}
	var first agent.Model
	for i, p := range cfg.Models.Providers {
		prov, err := openai.New(openai.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, MaxRetries: p.MaxRetries, Timeout: time.Duration(p.Timeout), PromptCacheKey: p.PromptCacheKey},
			log.With("provider", p.Name))
		if err != nil {
			return nil, fmt.Errorf("models.providers[%d] (%s): %w", i, p.Name, err)
		}
		if first == nil {
			first = prov
		}
		for _, name := range p.Models {
			if _, dup := models[name]; !dup {
				models[name] = prov
			}
		}
	}
	// Models named by the default or a route but listed by no provider are served by the
	// first provider.
	need := append([]string{cfg.Models.Default}, cfg.agentModels()...)
	for _, r := range cfg.Models.Routes {
		need = append(need, r.Model)
		need = append(need, r.Fallback...)
	}
	for _, name := range need {
		if _, ok := models[name]; !ok && name != "" {
			models[name] = first
		}
	}
	return models, nil
}

// newModelRouter puts the router in front of models: models.routes, and a breaker per model
// whose changes are logged and counted in m.
func newModelRouter(cfg *Config, log *slog.Logger, m *metrics.Metrics, record func(echogate.UsageRecord), models map[string]agent.Model) (*router.Router, error) {
	routes := make([]router.Route, 0, len(cfg.Models.Routes))
	for _, r := range cfg.Models.Routes {
		routes = append(routes, router.Route{Name: r.Name, When: router.Rule(r.When), Model: r.Model, Fallback: r.Fallback})
	}
	rt, err := router.New(router.Config{
		Routes: routes,
		OnState: func(model, from, to string) {
			log.Warn("model circuit breaker changed state", "model", model, "from", from, "to", to)
			m.Breaker(model, "model", to)
		},
		// Failed attempts outside a turn (none today) still reach the ledger.
		OnUsage: func(u echogate.Usage) {
			record(echogate.UsageRecord{Trigger: echogate.TriggerScheduled, Usage: u, At: time.Now()})
		},
	}, models, log)
	if err != nil {
		return nil, fmt.Errorf("models.routes: %w", err)
	}
	return rt, nil
}

// newTracker sets ms.tracker to the budgets of the budgets section on ledger, and ms.modelFor to
// the model the router would pick for a request (so estimates are priced at that model).
func (ms *modelStack) newTracker(cfg *Config, ledger cost.Ledger, log *slog.Logger) error {
	b := cfg.Budgets
	tcfg := cost.Config{
		Limits: cost.Limits{PerTurnUSD: b.PerTurnUSD, PerSessionUSD: b.PerSessionUSD, PerUserDayUSD: b.PerUserDayUSD,
			PerChannelDayUSD: b.PerChannelDayUSD, PerDayUSD: b.PerDayUSD, PerMonthUSD: b.PerMonthUSD},
		Prices:   ms.prices,
		CacheTTL: 5 * time.Second,
	}
	if ms.router != nil {
		rt := ms.router
		tcfg.ModelFor = func(req agent.Request) string {
			if ch, err := rt.Choose(req); err == nil && len(ch.Models) > 0 {
				return ch.Models[0]
			}
			return req.Model
		}
	}
	ms.modelFor = tcfg.ModelFor
	tr, err := cost.New(tcfg, ledger, log)
	if err != nil {
		return fmt.Errorf("budgets: %w", err)
	}
	ms.tracker = tr
	return nil
}
