package main

import (
	"time"

	"github.com/echogate/echogate/pipeline"
)

// defaultReplayAfter is agent.replay_after with PostgreSQL: how long a dead replica's events
// wait before another replica takes them over.
const defaultReplayAfter = time.Minute

// pipelineConfig is the pipeline's configuration from the agent, approval and tools sections;
// with the postgres backend, events are replayed only once their replica must be gone.
func pipelineConfig(cfg *Config, backend string) pipeline.Config {
	policy := map[string]string{}
	var approversOnly []string
	for name, t := range cfg.Tools {
		if t.Approval != "" {
			policy[name] = t.Approval
		}
		if t.ApproversOnly {
			approversOnly = append(approversOnly, name)
		}
	}
	pcfg := pipeline.Config{
		SystemPrompt:    cfg.Agent.SystemPrompt,
		Model:           cfg.Models.Default,
		MaxIterations:   cfg.Agent.MaxIterations,
		MaxTokens:       cfg.Agent.MaxTokens,
		TurnTimeout:     time.Duration(cfg.Agent.TurnTimeout),
		OnBusy:          pipeline.OnBusy(cfg.Agent.OnBusy),
		MailboxSize:     cfg.Agent.MailboxSize,
		HistoryMessages: cfg.Agent.HistoryMessages,
		ToolTimeout:     time.Duration(cfg.Agent.ToolTimeout),
		DrainTimeout:    time.Duration(cfg.Agent.DrainTimeout),
		FallbackText:    cfg.Agent.FallbackText,
		Approvers:       cfg.Approval.Approvers,
		ApprovalTimeout: time.Duration(cfg.Approval.Timeout),
		OnTimeout:       pipeline.OnTimeout(cfg.Approval.OnTimeout),
		JanitorInterval: time.Duration(cfg.Approval.CheckInterval),
		ToolPolicy:      policy,
		PerUser:         cfg.Agent.perUser(),
		ApproversOnly:   approversOnly,
	}
	if backend == "postgres" {
		// Several replicas may share the database: take over only events whose replica is gone.
		// A live replica renews the claims of the events it holds every third of this
		// (pipeline/renew.go), however long a turn runs or an event waits for its session.
		pcfg.ReplayAfter = defaultReplayAfter
		if cfg.Agent.ReplayAfter > 0 {
			pcfg.ReplayAfter = time.Duration(cfg.Agent.ReplayAfter)
		}
	}
	return pcfg
}
