package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/metrics"
)

// Stage is one step of a turn. Process blocks until the step is done; it reads and fills the
// turn. An error from the ContextStage fails the turn before the model is called; the later
// stages answer their failures themselves (a failed model call is a result the
// ResponseStage posts).
type Stage interface {
	Process(ctx context.Context, t *Turn) error
}

// StageFunc adapts a function to Stage.
type StageFunc func(ctx context.Context, t *Turn) error

// Process implements Stage.
func (f StageFunc) Process(ctx context.Context, t *Turn) error { return f(ctx, t) }

// Stages are the three steps every turn takes, in order.
type Stages struct {
	Context   Stage
	Inference Stage
	Response  Stage
}

// The stages' names in metrics (the stage label) and, prefixed with "echogate.", in spans.
const (
	stageContext   = "context"
	stageInference = "inference"
	stageResponse  = "response"
)

// buildStages builds the pipeline's stages, each wrapped in the observing decorators, added
// here once instead of inside each stage: metrics around every stage (and the turn's count
// around the last), tracing inside them.
func (p *Pipeline) buildStages() Stages {
	m, now := p.d.Metrics, p.cfg.Now
	pp := &people{tools: p.d.Tools, turns: p.d.Store, owners: &p.hist.owners, compactor: compactorCapsOf(p.d.Compactor), window: p.cfg.HistoryMessages}
	return Stages{
		Context:   metered(m, now, stageContext, p.traced("echogate.context", p.contextStage(pp))),
		Inference: metered(m, now, stageInference, p.inferenceStage(pp)), // its model calls and tools are traced one by one
		Response:  countedTurns(m, now, metered(m, now, stageResponse, p.traced("echogate.response", p.responseStage()))),
	}
}

// traced wraps s in a span named name (when the pipeline has a Tracer), ending it with the
// stage's error and the attributes the turn reports for that stage.
func (p *Pipeline) traced(name string, s Stage) Stage {
	if p.d.Tracer == nil {
		return s
	}
	return StageFunc(func(ctx context.Context, t *Turn) error {
		ctx, end := p.d.Tracer.Start(ctx, name, nil)
		err := s.Process(ctx, t)
		end(err, t.stageAttrs(name))
		return err
	})
}

// stageAttrs are the span attributes of a finished stage.
func (t *Turn) stageAttrs(stage string) map[string]string {
	if stage == "echogate.context" {
		return map[string]string{"echogate.history_messages": fmt.Sprint(len(t.in.Messages))}
	}
	return nil
}

// metered wraps s so that every run is timed and counted in m under the stage's name, the
// turn's channel and agent, and the run's outcome (stageOutcome). A nil m adds nothing.
func metered(m *metrics.Metrics, now func() time.Time, name string, s Stage) Stage {
	if m == nil {
		return s
	}
	return StageFunc(func(ctx context.Context, t *Turn) error {
		start := now()
		err := s.Process(ctx, t)
		m.Stage(name, t.ev.Conversation.Platform, t.agentName(), stageOutcome(name, t, err), now().Sub(start))
		return err
	})
}

// countedTurns wraps the last stage: once it has written the turn's end, the turn is counted
// by channel and status, timed from its dequeue, and counted for its agent.
func countedTurns(m *metrics.Metrics, now func() time.Time, s Stage) Stage {
	if m == nil {
		return s
	}
	return StageFunc(func(ctx context.Context, t *Turn) error {
		err := s.Process(ctx, t)
		status := string(t.rec.Status)
		m.Turn(t.ev.Conversation.Platform, status, now().Sub(t.start))
		m.AgentTurn(t.agentName(), status)
		return err
	})
}

// stageOutcome is how a stage's run ended, one of a bounded set: "error" when it returned an
// error (for the ResponseStage: the answer was not delivered), and for the InferenceStage,
// which answers its failures as results, the result's status: "paused", "stopped" or
// "error". Anything else is "ok".
func stageOutcome(stage string, t *Turn, err error) string {
	if err != nil {
		return "error"
	}
	if stage == stageInference {
		switch t.res.Status {
		case agent.StatusPaused:
			return "paused"
		case agent.StatusAborted:
			return "stopped"
		case agent.StatusError:
			return "error"
		}
	}
	return "ok"
}

// agentName is the name of the agent profile serving the turn ("" before one is chosen).
func (t *Turn) agentName() string {
	if t.prof == nil {
		return ""
	}
	return t.prof.Name
}
