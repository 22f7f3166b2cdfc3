// The lineage of a session's context: which stored messages the conversation a turn works on
// stands for, so that a checkpoint says which transcript Seq it covers, and Rebuild returns the
// latest checkpoint with the stored messages after it.

package compress

import (
	"context"
	"errors"
	"hash/maphash"
	"strings"

	"github.com/echogate/echogate"
)

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

// LoadCheckpoint reads the session's newest checkpoint from the store (as LatestCheckpoint), for
// RebuildFrom: a caller that reads it while it reads the history, not after.
func (c *Compressor) LoadCheckpoint(ctx context.Context, session echogate.SessionKey) (echogate.StoredMessage, error) {
	return c.store.LatestCheckpoint(ctx, session)
}

// RebuildFrom is Rebuild with the checkpoint read by LoadCheckpoint (cp, err as it returned
// them), read after the session's lock was taken: the store is not asked again.
func (c *Compressor) RebuildFrom(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage, cp echogate.StoredMessage, err error) ([]echogate.Message, []echogate.StoredMessage) {
	return c.rebuildFrom(ctx, session, hist, nil, &loaded{cp: cp, err: err})
}

// loaded is a checkpoint read by the caller (RebuildFrom).
type loaded struct {
	cp  echogate.StoredMessage
	err error
}

// rebuild is Rebuild and RebuildContinued; accept (nil: any) tells which checkpoints may start
// the context: another one is ignored, like a stale one.
func (c *Compressor) rebuild(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage, continued bool,
	accept func(echogate.Message) bool) ([]echogate.Message, []echogate.StoredMessage) {
	if known, have, ok := c.knownCheckpoint(session); continued && ok {
		l := &loaded{cp: known}
		if !have {
			l.err = echogate.ErrNotFound
		}
		return c.rebuildFrom(ctx, session, hist, accept, l)
	}
	return c.rebuildFrom(ctx, session, hist, accept, nil)
}

// rebuildFrom is rebuild from the checkpoint l (nil: the store's latest).
func (c *Compressor) rebuildFrom(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage,
	accept func(echogate.Message) bool, l *loaded) ([]echogate.Message, []echogate.StoredMessage) {
	var (
		cp  echogate.StoredMessage
		err error
	)
	if l != nil {
		cp, err = l.cp, l.err
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
