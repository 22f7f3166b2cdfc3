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
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// Defaults of Config.
const (
	DefaultWindow          = 128000
	DefaultThreshold       = 0.8
	DefaultKeepTurns       = 4
	DefaultKeepToolResults = 3
	DefaultTimeout         = 2 * time.Minute
	// maxSummaryTokens caps the default SummaryMaxTokens.
	maxSummaryTokens = 2000
	// maxToolResultTokens caps each verbatim tool result copied into a checkpoint.
	maxToolResultTokens = 500
	// targetFraction: after compressing, the prompt aims at this fraction of the threshold, so
	// the next calls of the turn have room to grow before compressing again.
	targetFraction = 0.6
	// maxLineages bounds the per-session transcript anchors kept between Rebuild and Compact.
	maxLineages = 4096
)

// CheckpointTitle starts every checkpoint message.
const CheckpointTitle = "Summary of the earlier conversation (checkpoint)"

// ackText is the assistant message that follows a checkpoint.
const ackText = "Understood. I will continue from this checkpoint and the messages that follow it."

// omittedText replaces the earlier conversation when it could not be summarized.
const omittedText = "Note: earlier messages of this conversation were left out to fit the model's context window " +
	"(they could not be summarized just now). If something from them is needed, ask the user."

// Config tunes a Compressor. The zero value means the defaults documented on each field.
type Config struct {
	// ContextWindows maps a model name to its context window in tokens (models.context_windows).
	ContextWindows map[string]int
	// DefaultWindow is the window of a model missing from ContextWindows; default 128000.
	DefaultWindow int
	// ChatModel is the model the conversation is sent to (the pipeline's default model): its
	// window is the one that counts. Empty means DefaultWindow applies.
	ChatModel string
	// Threshold is the fraction of the window at which compression starts; default 0.8. It
	// must be in (0, 1].
	Threshold float64
	// Reserve is the tokens Compact cannot see but the request carries (system prompt with its
	// memory and knowledge sections, tool definitions); it is subtracted from the threshold.
	// Default 0: the room above the threshold covers them. Set it for small windows.
	Reserve int
	// KeepTurns is how many of the latest user turns stay verbatim; default 4. Fewer are kept
	// when they alone would not fit; the current turn is always kept.
	KeepTurns int
	// KeepToolResults is how many of the latest tool results of the summarized part are copied
	// verbatim (capped) into the checkpoint; default 3; negative means none.
	KeepToolResults int
	// SummaryMaxTokens caps the summary; default an eighth of the threshold, at most 2000.
	SummaryMaxTokens int
	// Model is the model that writes the summary; default ChatModel.
	Model string
	// Timeout bounds one summary call; default 2m. When it passes, the oldest turns are dropped
	// instead.
	Timeout time.Duration
	// Estimate counts the tokens of one message; default EstimateMessage.
	Estimate func(echogate.Message) int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.DefaultWindow <= 0 {
		c.DefaultWindow = DefaultWindow
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.KeepTurns == 0 {
		c.KeepTurns = DefaultKeepTurns
	}
	if c.KeepToolResults == 0 {
		c.KeepToolResults = DefaultKeepToolResults
	}
	if c.KeepToolResults < 0 {
		c.KeepToolResults = 0
	}
	if c.Model == "" {
		c.Model = c.ChatModel
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Estimate == nil {
		c.Estimate = EstimateMessage
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.Threshold < 0 || c.Threshold > 1 {
		return bad("Threshold %.3g is out of range: use a fraction of the context window in (0, 1], e.g. 0.8", c.Threshold)
	}
	if c.KeepTurns < 0 {
		return bad("KeepTurns %d is negative: use the number of latest user turns to keep verbatim, e.g. 4", c.KeepTurns)
	}
	if c.Reserve < 0 || c.SummaryMaxTokens < 0 {
		return bad("Reserve (%d) and SummaryMaxTokens (%d) must not be negative", c.Reserve, c.SummaryMaxTokens)
	}
	for m, w := range c.ContextWindows {
		if w <= 0 {
			return bad("context window of model %q is %d: give its size in tokens, e.g. 128000", m, w)
		}
	}
	if c.Model == "" && c.ChatModel == "" {
		return bad("no model to summarize with: set ChatModel (the conversation's model) or Model")
	}
	if lim := c.limit(); lim < 256 {
		return bad("the usable context (%d tokens: Threshold × window − Reserve) is too small to compress into; raise the window or Threshold, or lower Reserve", lim)
	}
	return nil
}

// window returns the context window of model.
func (c Config) window(model string) int {
	if w, ok := c.ContextWindows[model]; ok && w > 0 {
		return w
	}
	return c.DefaultWindow
}

// limit is the prompt size (as estimated, messages only) above which Compact compresses.
func (c Config) limit() int {
	return int(float64(c.window(c.ChatModel))*c.Threshold) - c.Reserve
}

// summaryTokens is the summary's cap.
func (c Config) summaryTokens() int {
	if c.SummaryMaxTokens > 0 {
		return c.SummaryMaxTokens
	}
	return max(64, min(maxSummaryTokens, c.limit()/8))
}

// toolResultTokens is the cap of each verbatim tool result in a checkpoint.
func (c Config) toolResultTokens() int {
	if c.KeepToolResults == 0 {
		return 0
	}
	return max(32, min(maxToolResultTokens, c.limit()/8/c.KeepToolResults))
}

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

// lineage ties the messages a turn started from to their transcript Seq, so that a checkpoint
// made by Compact can say which stored messages it covers. Rebuild sets it; Compact reads and
// advances it.
type lineage struct {
	covers  int64    // Seq covered by the checkpoint at the head of the conversation (0: none)
	anchors []anchor // stored messages after it, oldest first
	// cp is the session's latest checkpoint as this process last read or wrote it (nil: none),
	// when cpKnown; RebuildContinued uses it instead of reading the store.
	cp      *echogate.StoredMessage
	cpKnown bool
}

type anchor struct {
	fp  uint64
	seq int64
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

// Rebuild starts a turn's context from the session's latest checkpoint: it returns the checkpoint
// pair (checkpoint message and acknowledgement) and the messages of hist stored after the
// checkpoint's Seq. Without a usable checkpoint it returns nil and hist unchanged. hist is the
// loaded transcript, oldest first; the caller repairs the returned stored messages as it would
// the whole history (tool call/result pairing) and appends them after the checkpoint pair.
//
// Rebuild blocks on the store read and never fails the turn: a store error is logged and the
// plain history is used. A checkpoint that covers the newest stored message or more is stale (the
// session was deleted and started again) and is ignored.
func (c *Compressor) Rebuild(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage) ([]echogate.Message, []echogate.StoredMessage) {
	return c.rebuild(ctx, session, hist, false, nil)
}

// RebuildContinued is Rebuild for a turn whose transcript continues the one the session's
// previous turn in this process started from (the session was neither deleted nor changed
// elsewhere since: the caller knows it, e.g. from its history cache). It uses the checkpoint
// that turn read or that its compaction stored, and reads the store only when it knows none.
func (c *Compressor) RebuildContinued(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage) ([]echogate.Message, []echogate.StoredMessage) {
	return c.rebuild(ctx, session, hist, true, nil)
}

// rebuild is Rebuild and RebuildContinued; accept (nil: any) tells which checkpoints may start
// the context: another one is ignored, like a stale one.
func (c *Compressor) rebuild(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage, continued bool,
	accept func(echogate.Message) bool) ([]echogate.Message, []echogate.StoredMessage) {
	var (
		cp  echogate.StoredMessage
		err error
	)
	if known, have, ok := c.knownCheckpoint(session); continued && ok {
		cp = known
		if !have {
			err = echogate.ErrNotFound
		}
	} else {
		cp, err = c.store.LatestCheckpoint(ctx, session)
	}
	switch {
	case errors.Is(err, echogate.ErrNotFound):
		c.remember(session, 0, hist, nil, true)
		return nil, hist
	case err != nil:
		c.log.Warn("context compression: load checkpoint failed; using the plain history", "session", session, "err", err)
		c.remember(session, 0, hist, nil, false)
		return nil, hist
	}
	if len(hist) == 0 || cp.Seq >= hist[len(hist)-1].Seq || strings.TrimSpace(cp.Message.Content) == "" {
		c.log.Warn("context compression: ignoring a stale checkpoint that does not match the transcript",
			"session", session, "covers_seq", cp.Seq, "history", len(hist))
		c.remember(session, 0, hist, &cp, true)
		return nil, hist
	}
	if accept != nil && !accept(cp.Message) {
		c.log.Debug("context compression: the session's checkpoint is not one to replay here; using the plain history",
			"session", session, "covers_seq", cp.Seq)
		c.remember(session, 0, hist, &cp, true)
		return nil, hist
	}
	i := 0
	for i < len(hist) && hist[i].Seq <= cp.Seq {
		i++
	}
	if i == 0 && hist[0].Seq > cp.Seq+1 {
		c.log.Debug("context compression: messages between the checkpoint and the history window are not loaded",
			"session", session, "covers_seq", cp.Seq, "first_loaded_seq", hist[0].Seq)
	}
	rest := hist[i:]
	c.remember(session, cp.Seq, rest, &cp, true)
	msg := cp.Message
	if msg.Role == "" {
		msg.Role = echogate.RoleUser
	}
	return []echogate.Message{msg, {Role: echogate.RoleAssistant, Content: ackText}}, rest
}

// knownCheckpoint returns the session's latest checkpoint as this process last read or wrote it:
// ok is false when it does not know it, have is false when it knows there is none.
func (c *Compressor) knownCheckpoint(session echogate.SessionKey) (cp echogate.StoredMessage, have, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lines[session]
	if l == nil || !l.cpKnown {
		return echogate.StoredMessage{}, false, false
	}
	if l.cp == nil {
		return echogate.StoredMessage{}, false, true
	}
	return *l.cp, true, true
}

// noteCheckpoint records the checkpoint Compact stored (saved) or failed to store (then the
// store is read again at the next turn).
func (c *Compressor) noteCheckpoint(session echogate.SessionKey, cp echogate.StoredMessage, saved bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.lines[session]; l != nil {
		l.cp, l.cpKnown = &cp, saved
	}
}

// remember records the transcript positions of the messages a turn starts from, and the
// session's latest checkpoint (cp, nil for none) when known.
func (c *Compressor) remember(session echogate.SessionKey, covers int64, rest []echogate.StoredMessage, cp *echogate.StoredMessage, known bool) {
	l := &lineage{covers: covers, anchors: make([]anchor, len(rest)), cp: cp, cpKnown: known}
	for i, sm := range rest {
		l.anchors[i] = anchor{fp: fingerprint(sm.Message), seq: sm.Seq}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.lines[session]; !ok && len(c.lines) >= maxLineages {
		for k := range c.lines { // evict an arbitrary session: it is re-made by its next turn
			delete(c.lines, k)
			break
		}
	}
	c.lines[session] = l
}

// advance finds the highest transcript Seq among the summarized messages, moves the session's
// lineage past it and returns it. known is false when the session has no lineage (the turn did
// not start through Rebuild in this process), in which case nothing may be stored.
func (c *Compressor) advance(session echogate.SessionKey, summarized []echogate.Message) (covers int64, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lines[session]
	if l == nil {
		return 0, false
	}
	covers = l.covers
	j := 0
	for _, m := range summarized {
		if IsCheckpoint(m) || isAck(m) {
			continue
		}
		fp := fingerprint(m)
		for k := j; k < len(l.anchors); k++ {
			if l.anchors[k].fp == fp {
				covers = max(covers, l.anchors[k].seq)
				j = k + 1
				break
			}
		}
	}
	kept := l.anchors[:0]
	for _, a := range l.anchors {
		if a.seq > covers {
			kept = append(kept, a)
		}
	}
	l.anchors, l.covers = kept, covers
	return covers, true
}

// fingerprint identifies a message's content for matching against stored messages.
//
// It is compared only within the process (anchors against the messages of the same turn), so a
// per-process seed is fine; maphash is several times faster than FNV over long contents, and
// every turn fingerprints its whole history.
func fingerprint(m echogate.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(fingerprintSeed)
	for _, s := range []string{string(m.Role), m.Content, m.ToolCallID, m.Name} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	for _, tc := range m.ToolCalls {
		for _, s := range []string{tc.ID, tc.Name, tc.Arguments} {
			h.WriteString(s)
			h.WriteByte(0)
		}
	}
	return h.Sum64()
}

var fingerprintSeed = maphash.MakeSeed()

// IsCheckpoint reports whether m is a checkpoint message made by a Compressor.
func IsCheckpoint(m echogate.Message) bool {
	return m.Role == echogate.RoleUser && strings.HasPrefix(m.Content, CheckpointTitle)
}

func isAck(m echogate.Message) bool {
	return m.Role == echogate.RoleAssistant && len(m.ToolCalls) == 0 && m.Content == ackText
}
