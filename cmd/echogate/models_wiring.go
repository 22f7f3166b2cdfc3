package main

import (
	"context"
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

// modelStack is the model side of the gateway: providers behind the router, and the cost tracker.
type modelStack struct {
	model   agent.Model    // what the pipeline calls: the router, a single provider, or the demo
	router  *router.Router // nil without providers
	tracker *cost.Tracker  // budgets; nil when the store cannot serve as a ledger
	prices  cost.Table
	// modelFor names the model the router will use for a request (pricing budget estimates).
	modelFor func(agent.Request) string
}

// newModelStack builds the providers (one client each), maps every configured model to the
// provider serving it, and puts the router in front: routes and fallback chains from
// models.routes, a breaker per model. With a single provider and no routes the router still
// gives the model a breaker and the /model command its list.
func newModelStack(cfg *Config, log *slog.Logger, m *metrics.Metrics, ledger cost.Ledger, record func(echogate.UsageRecord)) (*modelStack, error) {
	ms := &modelStack{prices: newPricer(cfg.Models.Prices)}
	if cfg.demoMode() {
		var err error
		ms.model, err = newModel(cfg, log)
		if err != nil {
			return nil, err
		}
	} else {
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
		ms.router, ms.model = rt, rt
	}
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
		return nil, fmt.Errorf("budgets: %w", err)
	}
	ms.tracker = tr
	return ms, nil
}

// recordBackground writes a ledger entry that belongs to no turn.
func recordBackground(s store, log *slog.Logger) func(echogate.UsageRecord) {
	return func(rec echogate.UsageRecord) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := s.RecordUsage(ctx, rec); err != nil {
			log.Error("record usage in ledger", "model", rec.Usage.Model, "err", err)
		}
	}
}
