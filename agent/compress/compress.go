// Package compress keeps long conversations inside the model's context window.
//
// A Compressor is the pipeline's Compactor: before every model call the agent loop hands it the
// conversation. While the estimated prompt is under Threshold × the model's window it returns the
// messages unchanged. Above it, everything older than the last KeepTurns user turns is summarized
// by a model into a checkpoint (goal, constraints, key facts, tool results, open items), the
// latest tool results of the summarized part are copied into it verbatim, and the conversation
// continues as
//
//	user:      "Summary of the earlier conversation (checkpoint)" + the checkpoint
//	assistant: a short acknowledgement (keeps user/assistant alternation for strict templates)
//	…          the last turns, verbatim
//
// The checkpoint is stored (CheckpointStore) with the transcript Seq it covers. Later turns call
// Rebuild on the loaded history: it returns the latest checkpoint and the stored messages after
// it, so the context is rebuilt from the checkpoint instead of from the raw history.
//
// A checkpoint is replayed to whoever speaks next in the session: for a conversation several
// people share, the caller compacts with CompactScrubbed, whose summarizer sees each message only
// as the caller allows (per-person tool results withheld), see scrub.go.
//
// The summarizer's usage is reported exactly once per summary through the report function
// (Kind echogate.UsageCompression). When the summary call fails, Compact drops the oldest turns
// instead (the turn goes on) and logs why.
package compress

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// CheckpointStore persists checkpoints. storage/sqlite and storage/postgres implement it.
//
// A checkpoint is carried in an echogate.StoredMessage: Session is the session, Seq the last
// transcript Seq the checkpoint summarizes (messages with a higher Seq follow it verbatim),
// Message the checkpoint message, Turn the turn that made it (may be empty) and At when it was
// made (zero: now).
//
// Both methods block on I/O, honour ctx and are safe for concurrent use.
type CheckpointStore interface {
	// SaveCheckpoint stores cp as the session's newest checkpoint.
	SaveCheckpoint(ctx context.Context, cp echogate.StoredMessage) error
	// LatestCheckpoint returns the session's newest checkpoint, or an error wrapping
	// echogate.ErrNotFound when it has none.
	LatestCheckpoint(ctx context.Context, session echogate.SessionKey) (echogate.StoredMessage, error)
}

// Compressor shortens conversations near the context window. It is safe for concurrent use by
// many sessions; calls for one session must not overlap (the pipeline runs one turn at a time per
// session).
type Compressor struct {
	cfg   Config
	model agent.Model
	store CheckpointStore
	log   *slog.Logger

	mu    sync.Mutex
	lines map[echogate.SessionKey]*lineage
}

// New returns a Compressor that summarizes with model and keeps checkpoints in store. log may
// be nil. New does no I/O.
func New(cfg Config, model agent.Model, store CheckpointStore, log *slog.Logger) (*Compressor, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: no model to summarize with (nil agent.Model)", ErrConfig)
	}
	if store == nil {
		return nil, fmt.Errorf("%w: no checkpoint store (nil CheckpointStore)", ErrConfig)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Compressor{cfg: cfg, model: model, store: store, log: log, lines: map[echogate.SessionKey]*lineage{}}, nil
}

// Limit returns the estimated message tokens above which Compact compresses.
func (c *Compressor) Limit() int { return c.cfg.limit() }

// Compact returns msgs unchanged (false) while their estimate is under the limit. Above it, it
// summarizes the older part into a checkpoint, stores the checkpoint and returns the checkpoint
// pair followed by the kept messages (true). It reports the summary call's usage exactly once
// through report (Kind echogate.UsageCompression), also when the call failed.
//
// Compact blocks for the summary call (bounded by Config.Timeout) and the store write. When the
// summary fails it drops the oldest turns instead, and a failed store write is only logged: in
// both cases the turn goes on. It returns an error only when ctx ended.
func (c *Compressor) Compact(ctx context.Context, session echogate.SessionKey, msgs []echogate.Message, report func(echogate.Usage)) ([]echogate.Message, bool, error) {
	return c.compact(ctx, session, msgs, report, nil)
}

// compact is Compact; scrub (may be nil) is CompactScrubbed's.
func (c *Compressor) compact(ctx context.Context, session echogate.SessionKey, msgs []echogate.Message,
	report func(echogate.Usage), scrub func(echogate.Message) (echogate.Message, bool)) ([]echogate.Message, bool, error) {
	limit := c.cfg.limit()
	before := EstimateMessages(msgs, c.cfg.Estimate)
	if before <= limit {
		return msgs, false, nil
	}
	if err := ctx.Err(); err != nil {
		return msgs, false, fmt.Errorf("compress: session %s: %w", session, err)
	}
	log := c.log.With("session", session, "model", c.cfg.Model)
	sumTokens := c.cfg.summaryTokens()
	toolTokens := c.cfg.toolResultTokens() * c.cfg.KeepToolResults
	pairCost := c.cfg.Estimate(echogate.Message{Role: echogate.RoleUser, Content: CheckpointTitle + "\n\n"}) +
		c.cfg.Estimate(echogate.Message{Role: echogate.RoleAssistant, Content: ackText}) + ReplyPriming
	budget := int(float64(limit)*targetFraction) - sumTokens - toolTokens - pairCost
	budget = max(budget, limit/4)
	p := split(msgs, c.cfg.Estimate, c.cfg.KeepTurns, budget)

	if len(p.summarize) == 0 || (onlyHead(p.summarize) && !c.headTooBig(p.summarize)) {
		// Nothing worth summarizing: the latest messages alone are too large; they were cut.
		if p.truncated == 0 {
			log.Warn("conversation exceeds the context window but nothing can be compressed", "tokens", before, "limit", limit)
			return msgs, false, nil
		}
		out := append(append([]echogate.Message(nil), p.summarize...), p.tail...)
		log.Warn("context compression cut oversized messages", "tokens_before", before,
			"tokens_after", EstimateMessages(out, c.cfg.Estimate), "limit", limit, "cut", p.truncated)
		return out, true, nil
	}

	view, verbatim := forSummary(p.summarize, scrub)
	text, err := c.summarize(ctx, session, view, sumTokens, report)
	if err != nil {
		if ctx.Err() != nil {
			return msgs, false, fmt.Errorf("compress: summarize session %s: %w", session, ctx.Err())
		}
		out := c.dropOldest(msgs, p, limit)
		log.Warn("context compression: summary failed, dropped the oldest turns instead", "err", err,
			"tokens_before", before, "tokens_after", EstimateMessages(out, c.cfg.Estimate), "limit", limit)
		return out, true, nil
	}
	cp := echogate.Message{Role: echogate.RoleUser, Content: c.checkpointText(text, verbatim, scrub != nil)}
	out := make([]echogate.Message, 0, 2+len(p.tail))
	out = append(out, cp, echogate.Message{Role: echogate.RoleAssistant, Content: ackText})
	out = append(out, p.tail...)
	// The checkpoint itself may push a barely fitting tail over: cut contents as a last resort.
	if n := EstimateMessages(out, c.cfg.Estimate); n > limit {
		var cut int
		out, cut = truncateToFit(out, c.cfg.Estimate, limit-ReplyPriming)
		p.truncated += cut
	}
	after := EstimateMessages(out, c.cfg.Estimate)

	covers, known := c.advance(session, p.summarize)
	if known {
		saved := echogate.StoredMessage{Session: session, Seq: covers, Message: cp, At: c.cfg.Now()}
		err := c.store.SaveCheckpoint(ctx, saved)
		if err != nil {
			log.Warn("context compression: checkpoint not stored; the next turn compresses again", "err", err)
		}
		c.noteCheckpoint(session, saved, err == nil)
	} else {
		log.Debug("context compression: checkpoint not stored: the turn's transcript positions are unknown (resumed turn)")
	}
	log.Info("conversation compressed into a checkpoint", "tokens_before", before, "tokens_after", after,
		"limit", limit, "summarized", len(p.summarize), "kept", len(p.tail), "covers_seq", covers,
		"pinned", p.pinned, "cut", p.truncated)
	return out, true, nil
}

// onlyHead reports whether msgs is nothing but a checkpoint pair.
func onlyHead(msgs []echogate.Message) bool { return checkpointHead(msgs) == len(msgs) }

// headTooBig reports whether a previous checkpoint alone is worth summarizing again (it is
// larger than a summary would be).
func (c *Compressor) headTooBig(head []echogate.Message) bool {
	return EstimateMessages(head, c.cfg.Estimate) > c.cfg.summaryTokens()+c.cfg.toolResultTokens()*c.cfg.KeepToolResults+64
}

// dropOldest is the fallback when no summary could be made: the previous checkpoint (or a note
// that earlier messages were left out) and as many of the latest messages as fit.
func (c *Compressor) dropOldest(msgs []echogate.Message, p plan, limit int) []echogate.Message {
	head := msgs[:checkpointHead(msgs)]
	if len(head) == 0 || EstimateMessages(head, c.cfg.Estimate) > limit/4 {
		head = []echogate.Message{{Role: echogate.RoleUser, Content: omittedText}, {Role: echogate.RoleAssistant, Content: ackText}}
	} else if len(head) == 1 {
		head = append(head, echogate.Message{Role: echogate.RoleAssistant, Content: ackText})
	}
	budget := int(float64(limit)*targetFraction) - EstimateMessages(head, c.cfg.Estimate)
	rest := msgs[checkpointHead(msgs):]
	q := split(rest, c.cfg.Estimate, c.cfg.KeepTurns, max(budget, limit/4))
	tail := q.tail
	if len(q.summarize) == 0 && len(p.tail) > 0 {
		tail = p.tail
	}
	out := make([]echogate.Message, 0, len(head)+len(tail))
	out = append(out, head...)
	out = append(out, tail...)
	if EstimateMessages(out, c.cfg.Estimate) > limit {
		out, _ = truncateToFit(out, c.cfg.Estimate, limit-ReplyPriming)
	}
	return out
}

// IsCheckpoint reports whether m is a checkpoint message made by a Compressor.
func IsCheckpoint(m echogate.Message) bool {
	return m.Role == echogate.RoleUser && strings.HasPrefix(m.Content, CheckpointTitle)
}

func isAck(m echogate.Message) bool {
	return m.Role == echogate.RoleAssistant && len(m.ToolCalls) == 0 && m.Content == ackText
}
