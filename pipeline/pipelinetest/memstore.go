// Package pipelinetest has test doubles for the pipeline: an in-memory Store (which also passes
// storage/storagetest) and a recording Replier.
package pipelinetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// MemStore is an in-memory pipeline.Store for tests. It is safe for concurrent use; one mutex
// guards everything (it is a test double, not a production store).
type MemStore struct {
	mu       sync.Mutex
	events   map[string]*memEvent
	sessions map[echogate.SessionKey]echogate.SessionInfo
	messages map[echogate.SessionKey][]echogate.StoredMessage
	seq      map[echogate.SessionKey]int64
	grants   map[echogate.SessionKey]map[string]string // user NUL tool → granted by
	turns    map[string]echogate.TurnRecord
	usage    []echogate.UsageRecord
	pending  map[echogate.SessionKey]echogate.PendingTurn
	resumes  map[string]echogate.TurnResume // by turn
	postings map[string]echogate.MessageRef // by turn
}

type memEvent struct {
	payload   []byte
	claimed   time.Time
	completed bool
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{
		postings: map[string]echogate.MessageRef{},
		events:   map[string]*memEvent{},
		sessions: map[echogate.SessionKey]echogate.SessionInfo{},
		messages: map[echogate.SessionKey][]echogate.StoredMessage{},
		seq:      map[echogate.SessionKey]int64{},
		grants:   map[echogate.SessionKey]map[string]string{},
		turns:    map[string]echogate.TurnRecord{},
		pending:  map[echogate.SessionKey]echogate.PendingTurn{},
		resumes:  map[string]echogate.TurnResume{},
	}
}

func notFound(what string, id any) error {
	return fmt.Errorf("memstore: %s %v: %w", what, id, echogate.ErrNotFound)
}

func (s *MemStore) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	s.mu.Lock()
	return nil
}

func (s *MemStore) ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	if _, ok := s.events[key]; ok {
		return false, nil
	}
	s.events[key] = &memEvent{payload: append([]byte(nil), payload...), claimed: at.UTC()}
	return true, nil
}

func (s *MemStore) CompleteEvent(ctx context.Context, key string, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if e, ok := s.events[key]; ok {
		e.completed = true
	}
	return nil
}

func (s *MemStore) UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var un []echogate.ClaimedEvent
	for k, e := range s.events {
		if !e.completed {
			un = append(un, echogate.ClaimedEvent{Key: k, Payload: e.payload, ClaimedAt: e.claimed})
		}
	}
	return ClaimedBefore(un, before, limit), nil
}

// ClaimedBefore is what UnfinishedEvents answers from the unfinished events un: those claimed
// before before, oldest claim first (then by key), at most limit (0: all).
func ClaimedBefore(un []echogate.ClaimedEvent, before time.Time, limit int) []echogate.ClaimedEvent {
	var out []echogate.ClaimedEvent
	for _, ev := range un {
		if ev.ClaimedAt.Before(before) {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ClaimedAt.Equal(out[j].ClaimedAt) {
			return out[i].ClaimedAt.Before(out[j].ClaimedAt)
		}
		return out[i].Key < out[j].Key
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func (s *MemStore) UpsertSession(ctx context.Context, si echogate.SessionInfo) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if old, ok := s.sessions[si.Key]; ok {
		old.UpdatedAt = si.UpdatedAt.UTC()
		s.sessions[si.Key] = old
		return nil
	}
	si.CreatedAt, si.UpdatedAt = si.CreatedAt.UTC(), si.UpdatedAt.UTC()
	s.sessions[si.Key] = si
	return nil
}

func (s *MemStore) GetSession(ctx context.Context, key echogate.SessionKey) (echogate.SessionInfo, error) {
	if err := s.lock(ctx); err != nil {
		return echogate.SessionInfo{}, err
	}
	defer s.mu.Unlock()
	si, ok := s.sessions[key]
	if !ok {
		return si, notFound("session", key)
	}
	return si, nil
}

func (s *MemStore) ListSessions(ctx context.Context, limit int) ([]echogate.SessionInfo, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]echogate.SessionInfo, 0, len(s.sessions))
	for _, si := range s.sessions {
		out = append(out, si)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *MemStore) DeleteSession(ctx context.Context, key echogate.SessionKey) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.sessions, key)
	delete(s.messages, key)
	delete(s.seq, key)
	delete(s.grants, key)
	delete(s.pending, key)
	for id, r := range s.resumes {
		if r.Session == key {
			delete(s.resumes, id)
		}
	}
	return nil
}

func (s *MemStore) AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.appendLocked(key, turn, msgs, at)
	return nil
}

func (s *MemStore) History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	all := s.messages[key]
	if limit > 0 && len(all) > limit {
		all = all[len(all)-limit:]
	}
	return append([]echogate.StoredMessage(nil), all...), nil
}

func (s *MemStore) HistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int) ([]echogate.StoredMessage, bool, error) {
	if err := s.lock(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	all := s.messages[key]
	i := slices.IndexFunc(all, func(m echogate.StoredMessage) bool { return m.Seq == after.Seq })
	if i < 0 || all[i].Turn != after.Turn || !all[i].At.Equal(after.At) {
		return nil, false, nil
	}
	rest := all[i+1:]
	if limit > 0 && len(rest) > limit {
		return nil, false, nil
	}
	return append([]echogate.StoredMessage(nil), rest...), true, nil
}

// GrantTool records user's grant of tool in the session (one person's, see Store); granting
// again keeps the first grant.
func (s *MemStore) GrantTool(ctx context.Context, key echogate.SessionKey, user, tool, by string, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.grants[key] == nil {
		s.grants[key] = map[string]string{}
	}
	if _, ok := s.grants[key][user+"\x00"+tool]; !ok {
		s.grants[key][user+"\x00"+tool] = by
	}
	return nil
}

// Grants maps the tools granted to user in the session to who granted each.
func (s *MemStore) Grants(ctx context.Context, key echogate.SessionKey, user string) (map[string]string, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := map[string]string{}
	for g, by := range s.grants[key] {
		if tool, ok := strings.CutPrefix(g, user+"\x00"); ok {
			out[tool] = by
		}
	}
	return out, nil
}

func (s *MemStore) CreateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.turns[t.ID]; ok {
		return fmt.Errorf("memstore: turn %s exists", t.ID)
	}
	s.turns[t.ID] = t
	return nil
}

func (s *MemStore) UpdateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok := s.turns[t.ID]
	if !ok {
		return notFound("turn", t.ID)
	}
	old.Status, old.Model, old.RouteReason, old.Error = t.Status, t.Model, t.RouteReason, t.Error
	old.InputTokens, old.OutputTokens, old.CachedInputTokens = t.InputTokens, t.OutputTokens, t.CachedInputTokens
	old.CostUSD, old.EndedAt, old.Skills = t.CostUSD, t.EndedAt, slices.Clone(t.Skills)
	s.turns[t.ID] = old
	return nil
}

func (s *MemStore) GetTurn(ctx context.Context, id string) (echogate.TurnRecord, error) {
	if err := s.lock(ctx); err != nil {
		return echogate.TurnRecord{}, err
	}
	defer s.mu.Unlock()
	t, ok := s.turns[id]
	if !ok {
		return t, notFound("turn", id)
	}
	return t, nil
}

func (s *MemStore) ListTurns(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.TurnRecord, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []echogate.TurnRecord
	for _, t := range s.turns {
		if key == "" || t.Session == key {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.After(out[j].StartedAt)
		}
		return out[i].ID > out[j].ID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// appendLocked appends msgs to key's transcript under turn; s.mu is held.
func (s *MemStore) appendLocked(key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) {
	for _, m := range msgs {
		s.seq[key]++
		s.messages[key] = append(s.messages[key], echogate.StoredMessage{Seq: s.seq[key], Session: key, Turn: turn, Message: m, At: at.UTC()})
	}
}

// RecordProgress appends msgs and records usage (setting their IDs) at once, as
// AppendMessages and RecordUsage would one after the other.
func (s *MemStore) RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.appendLocked(key, turn, msgs, at)
	for i, r := range usage {
		r.ID = int64(len(s.usage) + 1)
		r.At = r.At.UTC()
		s.usage = append(s.usage, r)
		usage[i].ID = r.ID
	}
	return nil
}

func (s *MemStore) SavePending(ctx context.Context, p echogate.PendingTurn) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.pending[p.Session] = p
	return nil
}

func (s *MemStore) GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error) {
	if err := s.lock(ctx); err != nil {
		return echogate.PendingTurn{}, err
	}
	defer s.mu.Unlock()
	p, ok := s.pending[key]
	if !ok {
		return p, notFound("pending turn of", key)
	}
	return p, nil
}

func (s *MemStore) DeletePending(ctx context.Context, key echogate.SessionKey) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.pending[key]; !ok {
		return notFound("pending turn of", key)
	}
	delete(s.pending, key)
	return nil
}

func (s *MemStore) ListPending(ctx context.Context, limit int) ([]echogate.PendingTurn, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]echogate.PendingTurn, 0, len(s.pending))
	for _, p := range s.pending {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// FinishTurn implements pipeline.TurnLog with the separate calls; the event is completed last.
func (s *MemStore) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	var errs []error
	if len(end.Messages) > 0 {
		errs = append(errs, s.AppendMessages(ctx, end.Session, end.Turn.ID, end.Messages, end.At))
	}
	errs = append(errs, s.UpdateTurn(ctx, end.Turn))
	for i, r := range end.Usage {
		id, err := s.RecordUsage(ctx, r)
		end.Usage[i].ID = id
		errs = append(errs, err)
	}
	if err := s.lock(ctx); err == nil {
		delete(s.resumes, end.Turn.ID)
		s.mu.Unlock()
	}
	if end.EventKey != "" {
		errs = append(errs, s.CompleteEvent(ctx, end.EventKey, end.At))
	}
	return errors.Join(errs...)
}
