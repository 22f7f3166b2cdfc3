package pipelinetest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/echogate/echogate"
)

// ResumeTurn implements pipeline.TurnLog: the pause of r.Paused.Turn is replaced by r and the
// resuming turn's record, or nothing happens (ErrNotFound).
func (s *MemStore) ResumeTurn(ctx context.Context, r echogate.TurnResume, rec echogate.TurnRecord) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	switch {
	case r.Turn == "" || r.Session == "" || rec.ID != r.Turn:
		return fmt.Errorf("memstore: resume turn %q of %q: invalid (record %q)", r.Turn, r.Session, rec.ID)
	case s.pending[r.Session].Turn != r.Paused.Turn || r.Paused.Turn == "":
		return notFound("pause of turn "+r.Paused.Turn+" in", r.Session)
	}
	if _, ok := s.turns[rec.ID]; ok {
		return fmt.Errorf("memstore: turn %s exists", rec.ID)
	}
	delete(s.pending, r.Session)
	if old, ok := s.turns[r.Paused.Turn]; ok && (old.Status == echogate.TurnPaused || old.Status == echogate.TurnRunning) {
		old.Status = echogate.TurnResumed
		s.turns[old.ID] = old
	}
	r.Paused.State = slices.Clone(r.Paused.State)
	r.Decision = slices.Clone(r.Decision)
	s.resumes[r.Turn] = r
	s.turns[rec.ID] = rec
	return nil
}

// GetResume implements pipeline.TurnLog.
func (s *MemStore) GetResume(ctx context.Context, eventKey string) (echogate.TurnResume, error) {
	if err := s.lock(ctx); err != nil {
		return echogate.TurnResume{}, err
	}
	defer s.mu.Unlock()
	for _, r := range s.resumes {
		if r.EventKey == eventKey {
			return r, nil
		}
	}
	return echogate.TurnResume{}, notFound("resume of event", eventKey)
}

// RecordToolRun implements pipeline.TurnLog.
func (s *MemStore) RecordToolRun(ctx context.Context, turn, callID string, result []byte, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.resumes[turn]
	if !ok {
		return notFound("resume of turn", turn)
	}
	if at.IsZero() {
		at = time.Now()
	}
	if result == nil {
		r.ToolStartedAt = at
	} else {
		r.ToolResult = slices.Clone(result)
	}
	s.resumes[turn] = r
	return nil
}

// PendingByPrompt implements pipeline.PendingStore.
func (s *MemStore) PendingByPrompt(ctx context.Context, ref echogate.MessageRef) (echogate.PendingTurn, error) {
	if err := s.lock(ctx); err != nil {
		return echogate.PendingTurn{}, err
	}
	defer s.mu.Unlock()
	for _, p := range s.pending {
		if p.Prompt == ref && ref.ID != "" {
			return p, nil
		}
	}
	return echogate.PendingTurn{}, notFound("pending of prompt", ref.ID)
}

// ReopenEvent implements pipeline.EventStore.
func (s *MemStore) ReopenEvent(ctx context.Context, key string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e, ok := s.events[key]
	if !ok {
		return notFound("event", key)
	}
	e.completed = false
	return nil
}

// RecordPosting implements pipeline.TurnLog.
func (s *MemStore) RecordPosting(ctx context.Context, turn string, ref echogate.MessageRef) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if turn == "" || ref.IsZero() {
		return fmt.Errorf("memstore: record posting of turn %q: empty turn or message id", turn)
	}
	if _, ok := s.turns[turn]; !ok {
		return notFound("turn", turn)
	}
	s.postings[turn] = ref
	return nil
}

// GetPosting implements pipeline.TurnLog.
func (s *MemStore) GetPosting(ctx context.Context, turn string) (echogate.MessageRef, error) {
	if err := s.lock(ctx); err != nil {
		return echogate.MessageRef{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.turns[turn]; !ok {
		return echogate.MessageRef{}, notFound("turn", turn)
	}
	return s.postings[turn], nil
}
