package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
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
		models, err := providerModels(cfg, log)
		if err != nil {
			return nil, err
		}
		rt, err := newModelRouter(cfg, log, m, record, models)
		if err != nil {
			return nil, err
		}
		ms.router, ms.model = rt, rt
	}
	if err := ms.newTracker(cfg, ledger, log); err != nil {
		return nil, err
	}
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
