package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// contextSectionBudget is the approximate token budget of each context provider's section.
const contextSectionBudget = 1500

// buildContext is the ContextStage: it loads the history (the user's message is persisted
// meanwhile, see beginTurn) and renders the system prompt with the context providers'
// sections. When resuming, the paused state already holds the conversation; only the system
// prompt is rebuilt.
func (s *ContextStage) buildContext(ctx context.Context, t *turn, st *agent.State, rs *agent.Resume, msgs []echogate.Message) (agent.Input, error) {
	key := t.key
	query := ""
	if len(msgs) > 0 {
		query = msgs[len(msgs)-1].Content
	}
	system, note := s.prompt(ctx, t, query)
	if st != nil {
		if !t.ev.Conversation.DM {
			s.hist.owners.put(t.id, t.userID) // a resumed turn's messages are its requester's
		}
		return agent.Input{System: system, State: st, Resume: rs, Messages: msgs}, nil
	}
	if t.inputSaved {
		hist, err := s.store.History(ctx, key, s.window)
		if err != nil {
			return agent.Input{}, fmt.Errorf("pipeline: load history: %w", err)
		}
		// The turn's input is the end of the saved history: the note goes before it.
		all := sanitizeHistory(make([]echogate.Message, 0, len(hist)+1), s.people.scopeHistory(ctx, t, hist))
		return agent.Input{System: system, Messages: insertNote(all, min(len(msgs), len(all)), note)}, nil
	}
	// Loading the history before the new message and fetching its images for the model are
	// independent. (The message itself is saved meanwhile by the turn's start writes.)
	var (
		hist []echogate.StoredMessage
		src  histSource
	)
	in := msgs
	fns := []func() error{func() (err error) {
		limit := max(s.window-len(msgs), 1)
		if hist, src, err = s.history(ctx, t.w, key, limit); err != nil {
			return fmt.Errorf("pipeline: load history: %w", err)
		}
		if src != histCached {
			s.recordSession(ctx, t, src == histChanged)
		}
		// A concurrent append of this turn's own messages may already be visible.
		own := false
		for len(hist) > 0 && hist[len(hist)-1].Turn == t.id {
			hist, own = hist[:len(hist)-1], true
		}
		t.noteHistory(hist, own)
		return nil
	}}
	if slices.ContainsFunc(msgs, func(m echogate.Message) bool { return len(m.Attachments) > 0 }) {
		fns = append(fns, func() error {
			in = s.prepareAttachments(ctx, t, msgs)
			return nil
		})
	}
	// With replicas the checkpoint is read whatever the cache held: alongside the history, not
	// after it (one round trip less on the turn's critical path).
	cp := s.loadCheckpoint(ctx, t, &fns)
	err := parallel(fns...)
	if err != nil {
		return agent.Input{}, err
	}
	// The history as t's person may see it, before the Compactor ties it to transcript positions:
	// its later Compact matches the messages it is given against these.
	hist = s.people.scopeHistory(ctx, t, hist)
	var head []echogate.Message
	if cp != nil {
		head, hist = cp.rb.RebuildFrom(ctx, t.key, hist, cp.cp, cp.err)
	} else {
		head, hist = s.rebuild(ctx, t, hist, src == histCached && s.soleWriter)
	}
	buf, all := contextMessages(head, hist, in, note)
	return agent.Input{System: system, Messages: all, Buf: buf}, nil
}

// contextMessages is the turn's model context: head, the sanitized history, the note and the
// turn's input, built in one slice, all, in an agent.Input.Buf (buf), so that the agent loop
// keeps them where they are instead of in a copy of its own.
func contextMessages(head []echogate.Message, hist []echogate.StoredMessage, in []echogate.Message, note string) (buf, all []echogate.Message) {
	buf = agent.NewBuf(len(head) + len(hist) + len(in) + 1)
	all = append(sanitizeHistory(append(buf[1:1], head...), hist), in...)
	return buf, insertNote(all, len(in), note)
}

// rebuild starts t's context from the session's latest checkpoint when the Compactor keeps
// them: it returns the checkpoint messages (head) and the stored messages after it. continued
// says the history cache served hist (see continuedRebuilder). In a shared conversation only a
// checkpoint written through summaryScrub may start it (scopedRebuilder); without that
// capability the whole window is replayed.
func (s *ContextStage) rebuild(ctx context.Context, t *turn, hist []echogate.StoredMessage, continued bool) ([]echogate.Message, []echogate.StoredMessage) {
	if !t.ev.Conversation.DM {
		if rb := s.compactor.scoped; rb != nil {
			return rb.RebuildScoped(ctx, t.key, hist, continued)
		}
		return nil, hist
	}
	if rb := s.compactor.continued; rb != nil && continued {
		return rb.RebuildContinued(ctx, t.key, hist)
	}
	if rb := s.compactor.rebuild; rb != nil {
		return rb.Rebuild(ctx, t.key, hist)
	}
	return nil, hist
}

// historyRebuilder is an optional capability of a Compactor (agent/compress has it): it starts a
// turn from the session's latest checkpoint, returning the checkpoint messages and the stored
// messages after it, which are sanitized like the whole history. It never fails the turn.
type historyRebuilder interface {
	Rebuild(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage) ([]echogate.Message, []echogate.StoredMessage)
}

// continuedRebuilder is a historyRebuilder that can skip the store for a transcript that
// continues the one the session's previous turn saw (the history cache served it, so the
// session was not deleted or changed elsewhere since): it reuses the checkpoint it knows.
type continuedRebuilder interface {
	RebuildContinued(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage) ([]echogate.Message, []echogate.StoredMessage)
}

// scopedRebuilder is the historyRebuilder of a conversation several people share: it starts
// from the latest checkpoint only when that was written through CompactScrubbed's scrub
// (history_people.go), and from the plain history otherwise.
type scopedRebuilder interface {
	RebuildScoped(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage, continued bool) ([]echogate.Message, []echogate.StoredMessage)
}

// sanitizeHistory turns stored messages into a sequence every OpenAI-compatible API accepts:
// tool results only directly after the assistant message that called them, and every call
// answered (a turn that was stopped mid-tools gets a synthetic "no result" answer).
//
// The messages are appended to out, which is returned.
func sanitizeHistory(out []echogate.Message, hist []echogate.StoredMessage) []echogate.Message {
	var open []echogate.ToolCall // calls of the last assistant message still unanswered
	answered := map[string]bool{}
	closeOpen := func() {
		if len(open) == 0 {
			return // nothing to answer, nothing recorded
		}
		for _, c := range open {
			if !answered[c.ID] {
				out = append(out, echogate.Message{Role: echogate.RoleTool, ToolCallID: c.ID, Name: c.Name,
					Content: "(no result: the turn ended before this call ran)", IsError: true})
			}
		}
		open = nil
		clear(answered)
	}
	for _, sm := range hist {
		m := sm.Message
		if m.Role == echogate.RoleTool {
			known := false
			for _, c := range open {
				if c.ID == m.ToolCallID {
					known = true
					break
				}
			}
			if !known || answered[m.ToolCallID] {
				continue // its call was cut off by the history window, or a duplicate
			}
			answered[m.ToolCallID] = true
			out = append(out, m)
			continue
		}
		closeOpen()
		out = append(out, m)
		if m.Role == echogate.RoleAssistant && len(m.ToolCalls) > 0 {
			open = m.ToolCalls
		}
	}
	closeOpen()
	return out
}

// recordSession writes the session record that t skipped because it was written recently
// (sessionMarks), when its transcript could not be checked against the cached one or was not
// the cached one (changed): the session may have been deleted since, and its record must exist
// again before the turn ends. A changed transcript also drops the session's mark.
func (s *ContextStage) recordSession(ctx context.Context, t *turn, changed bool) {
	key := t.key
	if changed {
		s.marks.forget(key)
	}
	if t.unrecorded == nil {
		return
	}
	info := *t.unrecorded
	t.unrecorded = nil
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	if err := s.store.UpsertSession(uctx, info); err != nil {
		t.log.Error("pipeline: upsert session", "err", err)
		return
	}
	s.marks.mark(key, info.UpdatedAt)
}

// parallel runs fns concurrently and returns their errors joined. The stores batch concurrent
// writes into one transaction (group commit), so independent writes cost one round trip.
func parallel(fns ...func() error) error {
	if len(fns) == 1 {
		return fns[0]()
	}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = fn()
		}()
	}
	errs[0] = fns[0]()
	wg.Wait()
	return errors.Join(errs...)
}

// checkpointLoader is a historyRebuilder whose checkpoint read the caller makes (agent/compress
// has it): LoadCheckpoint reads the session's latest, RebuildFrom rebuilds from what it read.
type checkpointLoader interface {
	LoadCheckpoint(ctx context.Context, session echogate.SessionKey) (echogate.StoredMessage, error)
	RebuildFrom(ctx context.Context, session echogate.SessionKey, hist []echogate.StoredMessage, cp echogate.StoredMessage, err error) ([]echogate.Message, []echogate.StoredMessage)
}

// loadedCheckpoint is a checkpoint read alongside the history (loadCheckpoint).
type loadedCheckpoint struct {
	rb  checkpointLoader
	cp  echogate.StoredMessage
	err error
}

// loadCheckpoint adds the read of t's session's checkpoint to fns, to run alongside the history
// read, when rebuild would read it after the history whatever that showed: a conversation
// of one person (DM) on a store shared by replicas (no cached checkpoint is trusted there, see
// continuedRebuilder), with a Compactor that lets the caller read it. nil when it does not. A
// store that wrote the turn's start with the checkpoint read in the same round trip
// (turnstart.Start.Checkpoint, asked by beginTurn) is not asked again; the compactor's store is
// the pipeline's (cmd/echogate gives both the one store).
func (s *ContextStage) loadCheckpoint(ctx context.Context, t *turn, fns *[]func() error) *loadedCheckpoint {
	rb := s.compactor.loader
	if rb == nil || s.soleWriter || !t.ev.Conversation.DM {
		return nil
	}
	lc := &loadedCheckpoint{rb: rb}
	*fns = append(*fns, func() error {
		if c, ok := t.w.Checkpoint(ctx); ok {
			lc.cp, lc.err = c.Msg, c.Err
			return nil
		}
		lc.cp, lc.err = rb.LoadCheckpoint(ctx, t.key)
		return nil // RebuildFrom logs a failed read and goes on without it, as rebuild does
	})
	return lc
}
