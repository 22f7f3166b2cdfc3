package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/echogate/echogate/storage/sqlite"
)

type timedStore struct {
	*sqlite.Store
	mu  sync.Mutex
	lat map[string][]time.Duration
}

func (s *timedStore) rec(name string, t0 time.Time) {
	d := time.Since(t0)
	s.mu.Lock()
	s.lat[name] = append(s.lat[name], d)
	s.mu.Unlock()
}

func (s *timedStore) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.lat {
		names = append(names, n)
	}
	sort.Strings(names)
	out := ""
	for _, n := range names {
		l := s.lat[n]
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		out += fmt.Sprintf("  %-15s n=%6d p50 %10s p99 %10s\n", n, len(l), pct(l, 50), pct(l, 99))
	}
	return out
}

func (s *timedStore) ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error) {
	defer s.rec("ClaimEvent", time.Now())
	return s.Store.ClaimEvent(ctx, key, payload, at)
}
func (s *timedStore) CompleteEvent(ctx context.Context, key string, at time.Time) error {
	defer s.rec("CompleteEvent", time.Now())
	return s.Store.CompleteEvent(ctx, key, at)
}
func (s *timedStore) GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error) {
	defer s.rec("GetPending", time.Now())
	return s.Store.GetPending(ctx, key)
}
func (s *timedStore) UpsertSession(ctx context.Context, si echogate.SessionInfo) error {
	defer s.rec("UpsertSession", time.Now())
	return s.Store.UpsertSession(ctx, si)
}
func (s *timedStore) AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error {
	defer s.rec("AppendMessages", time.Now())
	return s.Store.AppendMessages(ctx, key, turn, msgs, at)
}
func (s *timedStore) History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error) {
	defer s.rec("History", time.Now())
	return s.Store.History(ctx, key, limit)
}
func (s *timedStore) CreateTurn(ctx context.Context, t echogate.TurnRecord) error {
	defer s.rec("CreateTurn", time.Now())
	return s.Store.CreateTurn(ctx, t)
}

// BeginTurn is sqlite.Store's, with this store's timed calls.
func (s *timedStore) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.Deferred(ctx, b, s, turnstart.DefaultDelay)
}

// StartTurn is timed from the call until the store reports the write (BeginTurn queues the
// turn's record with it), under CreateTurn's name.
func (s *timedStore) StartTurn(ctx context.Context, t echogate.TurnRecord, done func(error)) {
	t0 := time.Now()
	s.Store.StartTurn(ctx, t, func(err error) { s.rec("CreateTurn", t0); done(err) })
}
func (s *timedStore) UpdateTurn(ctx context.Context, t echogate.TurnRecord) error {
	defer s.rec("UpdateTurn", time.Now())
	return s.Store.UpdateTurn(ctx, t)
}
func (s *timedStore) RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error) {
	defer s.rec("RecordUsage", time.Now())
	return s.Store.RecordUsage(ctx, r)
}
