package pipeline

import (
	"context"
	"time"

	"github.com/echogate/echogate/internal/metrics"
)

// ContextStage builds the model's input: the history (from the history cache and the store),
// the system prompt with the context providers' sections (memory, knowledge), attachments;
// for a resumed turn the paused state (context.go holds the assembly). It sets t.in. It holds
// what it reads, nothing of the dispatcher's.
type ContextStage struct {
	store     Store
	hist      *historyCache  // recent transcripts (histcache.go)
	marks     *sessionMarks  // sessions whose record was written recently (marks.go)
	snaps     *snapshotCache // frozen standing context per session and person (prompt.go)
	providers []contextSource
	compactor compactorCaps
	people    *people // whose tool results a person may see (history_people.go)
	files     *Files
	metrics   *metrics.Metrics
	window    int // Config.HistoryMessages
	now       func() time.Time
	// soleWriter: this process is the only writer of its transcripts (no SessionLocker), so a
	// transcript it wrote through to the cache is served without asking the store. This is
	// coordination between replicas (whose cached copy may be stale), not a write order.
	soleWriter bool
	catalogue  func(*profile) string // the agent's skill catalogue (skills.go)
	overrides  *modelOverrides       // the sessions' /model choices (commands.go)
}

// contextStage is the pipeline's ContextStage.
func (p *Pipeline) contextStage(pp *people) *ContextStage {
	return &ContextStage{store: p.d.Store, hist: p.hist, marks: p.marks, snaps: p.snaps, providers: contextSourcesOf(p.d.Context),
		compactor: compactorCapsOf(p.d.Compactor), people: pp, files: p.d.Files, metrics: p.d.Metrics, window: p.cfg.HistoryMessages,
		now: p.cfg.Now, soleWriter: !p.shared.replicas(), catalogue: p.skillCatalogue, overrides: p.overrides}
}

// Process implements Stage. It blocks on the store and the context providers; an error fails
// the turn before the model is called.
func (s *ContextStage) Process(ctx context.Context, t *Turn) error {
	in, err := s.buildContext(ctx, t, t.resume, t.decision, t.msgs)
	if err != nil {
		return err
	}
	t.in = in
	return nil
}
