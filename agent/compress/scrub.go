package compress

import (
	"context"
	"strings"

	"github.com/echogate/echogate"
)

// A checkpoint is replayed at the start of every later turn of its session. When a session has
// several people (a Slack thread, a Discord channel), what one person's tools returned must not
// reach the others through it: the caller then compacts with a scrub function, which gives each
// summarized message as the summary may see it (a per-person result as a placeholder, a call
// without its arguments) or leaves it out. Only the summarizer's input and the checkpoint's
// verbatim tool results go through it; the kept messages are returned as given (they are the
// current person's context), and the checkpoint's lineage is computed from the messages as given.
// Such a checkpoint says so (scopedNote, after the intro); RebuildScoped starts a turn only from
// such a checkpoint.

// scopedNote follows checkpointIntro in a checkpoint whose summary was scrubbed.
const scopedNote = " Tool results of individual participants were left out of it: when one is needed again, call the tool again."

// RebuildScoped is Rebuild, or RebuildContinued when continued, for a conversation several
// people share: only a checkpoint written by CompactScrubbed with a scrub function starts the
// context. Another one (written before the session had several people, or by an older version)
// is ignored like a stale one: the plain history is returned, and the turn's compaction, if
// any, writes a scoped checkpoint of it.
func (c *Compressor) RebuildScoped(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage, continued bool) ([]echogate.Message, []echogate.StoredMessage) {
	return c.rebuild(ctx, session, hist, continued, scopedCheckpoint)
}

// scopedCheckpoint reports whether m is a checkpoint written by CompactScrubbed with a scrub
// function.
func scopedCheckpoint(m echogate.Message) bool {
	return IsCheckpoint(m) && strings.HasPrefix(m.Content, CheckpointTitle+"\n\n"+checkpointIntro+scopedNote)
}

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
