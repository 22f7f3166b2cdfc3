package pipeline

import (
	"context"
	"time"
)

// idleSweepEvery is how often the pipeline releases idle sessions' in-memory state: a
// session's cached history goes 20–40 s after its last turn (the cache serves a conversation's
// consecutive turns; a later one reads the transcript from the store), its session-record mark
// once older than sessionTouchEvery. Mailboxes are already reaped when they empty.
const idleSweepEvery = 20 * time.Second

// releaseIdle sweeps every idleSweepEvery until ctx ends. Run owns it.
func (p *Pipeline) releaseIdle(ctx context.Context) {
	t := time.NewTicker(idleSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.sweepIdle(p.cfg.Now())
		}
	}
}

// sweepIdle releases what idle sessions hold: cached history not used since the previous
// sweep, and marks older than sessionTouchEvery at now.
func (p *Pipeline) sweepIdle(now time.Time) {
	p.hist.sweep()
	p.marks.sweep(now)
}
