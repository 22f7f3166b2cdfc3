package compress

import (
	"context"

	"github.com/echogate/echogate"
)

// A checkpoint is replayed at the start of every later turn of its session. When a session has
// several people (a Slack thread, a Discord channel), what one person's tools returned must not
// reach the others through it: the caller then compacts with a scrub function, which gives each
// summarized message as the summary may see it (a per-person result as a placeholder, a call
// without its arguments) or leaves it out. Only the summarizer's input and the checkpoint's
// verbatim tool results go through it; the kept messages are returned as given (they are the
// current person's context), and the checkpoint's lineage is computed from the messages as given.

// CompactScrubbed is Compact whose summary sees the summarized messages through scrub: scrub
// returns a message as the summary may see it and whether to keep it at all. A tool result that
// scrub changes or leaves out is not copied into the checkpoint verbatim. A nil scrub is Compact.
func (c *Compressor) CompactScrubbed(ctx context.Context, session echogate.SessionKey, msgs []echogate.Message,
	report func(echogate.Usage), scrub func(echogate.Message) (echogate.Message, bool)) ([]echogate.Message, bool, error) {
	return c.compact(ctx, session, msgs, report, scrub)
}

// forSummary returns msgs as the summarizer may see them (view) and the messages whose tool
// results may be copied verbatim into the checkpoint (verbatim: those scrub kept unchanged).
// Without scrub both are msgs.
func forSummary(msgs []echogate.Message, scrub func(echogate.Message) (echogate.Message, bool)) (view, verbatim []echogate.Message) {
	if scrub == nil {
		return msgs, msgs
	}
	view = make([]echogate.Message, 0, len(msgs))
	verbatim = make([]echogate.Message, 0, len(msgs))
	for _, m := range msgs {
		s, keep := scrub(m)
		if !keep {
			continue
		}
		view = append(view, s)
		if m.Role != echogate.RoleTool || s.Content == m.Content {
			verbatim = append(verbatim, s)
		}
	}
	return view, verbatim
}
