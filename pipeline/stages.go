package pipeline

import (
	"context"
	"fmt"
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

// stages builds the pipeline's stages, each wrapped in the observing decorators: tracing
// around every stage is added here, once, instead of inside each.
func (p *Pipeline) buildStages() Stages {
	return Stages{
		Context:   p.observed("echogate.context", ContextStage{p: p}),
		Inference: InferenceStage{p: p}, // its model calls and tools are traced one by one
		Response:  p.observed("echogate.response", ResponseStage{p: p}),
	}
}

// observed wraps s in a span named name (when the pipeline has a Tracer), ending it with the
// stage's error and the attributes the turn reports for that stage.
func (p *Pipeline) observed(name string, s Stage) Stage {
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
