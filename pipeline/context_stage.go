package pipeline

import "context"

// ContextStage builds the model's input: the history (from the history cache and the store),
// the system prompt with the context providers' sections (memory, knowledge), attachments;
// for a resumed turn the paused state (context.go holds the assembly). It sets t.in.
type ContextStage struct{ p *Pipeline }

// Process implements Stage. It blocks on the store and the context providers; an error fails
// the turn before the model is called.
func (s ContextStage) Process(ctx context.Context, t *Turn) error {
	in, err := s.p.buildContext(ctx, t, t.resume, t.decision, t.msgs)
	if err != nil {
		return err
	}
	t.in = in
	return t.w.Ready(ctx) // what the store writes before the model is called (beginTurn)
}
