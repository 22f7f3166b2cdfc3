package pipelinetest

import (
	"context"

	"github.com/echogate/echogate"
)

func (s *MemStore) RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	r.ID = int64(len(s.usage) + 1)
	r.At = r.At.UTC()
	s.usage = append(s.usage, r)
	return r.ID, nil
}

func match(r echogate.UsageRecord, f echogate.UsageFilter) bool {
	return (f.Turn == "" || r.Turn == f.Turn) && (f.Session == "" || r.Session == f.Session) &&
		(f.UserID == "" || r.UserID == f.UserID) && (f.Channel == "" || r.Channel == f.Channel) &&
		(f.Agent == "" || r.Agent == f.Agent) &&
		(f.Since.IsZero() || !r.At.Before(f.Since)) && (f.Until.IsZero() || r.At.Before(f.Until))
}

func (s *MemStore) SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error) {
	if err := s.lock(ctx); err != nil {
		return echogate.Usage{}, err
	}
	defer s.mu.Unlock()
	var u echogate.Usage
	for _, r := range s.usage {
		if match(r, f) {
			u.InputTokens += r.Usage.InputTokens
			u.OutputTokens += r.Usage.OutputTokens
			u.CachedInputTokens += r.Usage.CachedInputTokens
			u.CostUSD += r.Usage.CostUSD
		}
	}
	return u, nil
}

func (s *MemStore) ListUsage(ctx context.Context, f echogate.UsageFilter, limit int) ([]echogate.UsageRecord, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []echogate.UsageRecord
	for _, r := range s.usage {
		if match(r, f) {
			out = append(out, r)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}
