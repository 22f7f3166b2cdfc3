package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/knowledge"
	"github.com/echogate/echogate/memory"
)

// usageReporter is the ReportUsage hook of memory and knowledge: the embedding and consolidation
// usage they report, priced when the endpoint gave no cost, handed to d.record.
func (d memkbDeps) usageReporter() func(context.Context, echogate.UsageRecord) {
	return func(_ context.Context, rec echogate.UsageRecord) {
		if d.pricer != nil && rec.Usage.CostUSD == 0 {
			rec.Usage.CostUSD = d.pricer.Price(rec.Usage)
		}
		if d.record != nil {
			d.record(rec)
		}
	}
}

// openKnowledge builds the knowledge base on ms and k.emb, and logs its stale documents.
func (k *memkb) openKnowledge(ctx context.Context, ms memStore, d memkbDeps, report func(context.Context, echogate.UsageRecord)) error {
	cfg := k.cfg
	kc := cfg.Knowledge
	var err error
	k.kb, err = knowledge.New(knowledge.Config{ChunkSize: kc.ChunkSize, ChunkOverlap: kc.ChunkOverlap, TopK: kc.TopK, MinSimilarity: kc.MinSimilarity,
		Now: d.now, ReportUsage: report, KeywordOnly: d.keyword, EmbedModel: embedIdentity(cfg, d.backend != nil)}, ms, k.emb, d.log.With("component", "knowledge"))
	if err != nil {
		return fmt.Errorf("knowledge: %w", err)
	}
	k.warnStale(ctx, d.log)
	return nil
}

// openMemory builds long-term memory on ms and k.emb, with its consolidation (off when disabled,
// without a model, or in demo mode without an embedding endpoint) held to the cost budget, and
// logs its stale memories.
func (k *memkb) openMemory(ctx context.Context, ms memStore, d memkbDeps, report func(context.Context, echogate.UsageRecord)) error {
	cfg := k.cfg
	mc := cfg.Memory
	var ext memory.Extractor
	model := mc.Consolidation.Model
	if model == "" {
		model = cfg.Models.Default
	}
	switch {
	case !enabled(mc.Consolidation.Enabled) || d.model == nil:
	case cfg.demoMode() && d.backend == nil:
		d.log.Info("memory: consolidation is off in demo mode (the offline model cannot extract facts); remember/recall still work")
	default:
		ext = modelExtractor{m: d.model, model: model}
	}
	hooks := memory.Hooks{ReportUsage: report, KeywordOnly: d.keyword}
	if d.budget != nil {
		hooks.Budget = func(ctx context.Context, userID, channel string) error {
			return d.budget(ctx, cost.Scope{UserID: userID, Channel: channel, Trigger: echogate.TriggerConsolidation},
				agent.Request{Model: model, MaxTokens: 1000, Messages: []echogate.Message{{Role: echogate.RoleUser, Content: strings.Repeat("x", 8000)}}})
		}
	}
	var err error
	k.mem, err = memory.New(memory.Config{
		ChannelMemories:     mc.ChannelMemories,
		PinnedLimit:         mc.PinnedLimit,
		RelevantLimit:       mc.RelevantLimit,
		MinSimilarity:       mc.MinSimilarity,
		DuplicateSimilarity: mc.DuplicateSimilarity,
		Debounce:            time.Duration(mc.Consolidation.Debounce),
		MaxDelay:            time.Duration(mc.Consolidation.MaxDelay),
		PollInterval:        time.Duration(mc.Consolidation.PollInterval),
		Lease:               time.Duration(mc.Consolidation.Lease),
		MaxAttempts:         mc.Consolidation.MaxAttempts,
		EmbedModel:          embedIdentity(cfg, d.backend != nil),
		Now:                 d.now,
		After:               d.after,
	}, ms, k.emb, ext, hooks, d.log.With("component", "memory"))
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	k.warnStaleMemories(ctx, d.log)
	return nil
}
