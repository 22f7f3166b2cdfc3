// Package memorytest holds an in-memory memory.Store for tests of the packages that use the
// memory service (the pipeline's shared-session tests). It is deterministic and does no I/O.
// Text search matches any word of the query (case-insensitive); vector search finds nothing,
// so the service runs as with its embedding endpoint down.
package memorytest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// Transcript is where the store reads conversations from: the pipeline's store
// (pipelinetest.MemStore satisfies it). The author of an entry is the user of its turn.
type Transcript interface {
	History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error)
	GetTurn(ctx context.Context, id string) (echogate.TurnRecord, error)
}

// Store is an in-memory memory.Store. It is safe for concurrent use.
type Store struct {
	tr   Transcript
	mu   sync.Mutex
	mems map[string]memrec.Memory
	jobs map[jobKey]*job
}

type jobKey struct{ session, user string }

type job struct {
	memrec.ConsolidationJob
	notAfter time.Time
	pending  bool
}

// New returns an empty store reading transcripts from tr (nil: there are none).
func New(tr Transcript) *Store {
	return &Store{tr: tr, mems: map[string]memrec.Memory{}, jobs: map[jobKey]*job{}}
}

func (s *Store) PutMemory(ctx context.Context, m memrec.Memory) error {
	if m.ID == "" || m.Owner == "" {
		return fmt.Errorf("memorytest: put memory: id and owner are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mems[m.ID] = m
	return nil
}

func (s *Store) GetMemory(ctx context.Context, id string) (memrec.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.mems[id]
	if !ok {
		return memrec.Memory{}, fmt.Errorf("memorytest: memory %q: %w", id, echogate.ErrNotFound)
	}
	return m, nil
}

func (s *Store) match(m memrec.Memory, f memrec.MemoryFilter) bool {
	return (len(f.Owners) == 0 || slices.Contains(f.Owners, m.Owner)) &&
		(!f.Current || m.Current(f.Now)) && (!f.Pinned || m.Pinned) &&
		(f.StaleFor == "" || len(m.Embedding) == 0 || m.EmbedModel != f.StaleFor)
}

// ListMemories lists the matching memories, newest update first.
func (s *Store) ListMemories(ctx context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memrec.Memory
	for _, m := range s.mems {
		if s.match(m, f) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b memrec.Memory) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.ID, b.ID))
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (s *Store) CountMemories(ctx context.Context, f memrec.MemoryFilter) (int, error) {
	f.Limit = 0
	ms, err := s.ListMemories(ctx, f)
	return len(ms), err
}

func (s *Store) DeleteMemory(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mems[id]; !ok {
		return fmt.Errorf("memorytest: delete memory %q: %w", id, echogate.ErrNotFound)
	}
	delete(s.mems, id)
	return nil
}

// SearchMemoriesVector finds nothing: the fake has no vectors.
func (s *Store) SearchMemoriesVector(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error) {
	return nil, nil
}

// SearchMemoriesText returns current memories of q.Owners sharing a word with q.Text, scored by
// the number of shared words.
func (s *Store) SearchMemoriesText(ctx context.Context, q memrec.MemoryQuery) ([]memrec.ScoredMemory, error) {
	words := strings.Fields(strings.ToLower(q.Text))
	ms, err := s.ListMemories(ctx, memrec.MemoryFilter{Owners: q.Owners, Current: true, Now: q.Now})
	if err != nil || len(q.Owners) == 0 {
		return nil, err
	}
	var out []memrec.ScoredMemory
	for _, m := range ms {
		n := 0
		for _, w := range strings.Fields(strings.ToLower(m.Text)) {
			if slices.Contains(words, w) {
				n++
			}
		}
		if n > 0 {
			out = append(out, memrec.ScoredMemory{Memory: m, Score: float64(n)})
		}
	}
	slices.SortStableFunc(out, func(a, b memrec.ScoredMemory) int { return cmp.Compare(b.Score, a.Score) })
	limit := cmp.Or(q.Limit, 10)
	if len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		out[i].Rank = i + 1
	}
	return out, nil
}

// MessagesBy returns the transcript entries of the session's turns whose user is userID, after
// seq `after`, oldest first.
func (s *Store) MessagesBy(ctx context.Context, key echogate.SessionKey, userID string, after int64, limit int) ([]echogate.StoredMessage, error) {
	if s.tr == nil {
		return nil, nil
	}
	all, err := s.tr.History(ctx, key, 0)
	if err != nil {
		return nil, err
	}
	var out []echogate.StoredMessage
	users := map[string]string{}
	for _, m := range all {
		if m.Seq <= after || m.Turn == "" {
			continue
		}
		u, ok := users[m.Turn]
		if !ok {
			rec, err := s.tr.GetTurn(ctx, m.Turn)
			if err != nil {
				continue // not recorded yet: read once it is
			}
			u, users[m.Turn] = rec.UserID, rec.UserID
		}
		if u == userID {
			out = append(out, m)
		}
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// EnqueueConsolidation schedules the job of (j.Session, j.UserID), debounced like the real stores.
func (s *Store) EnqueueConsolidation(ctx context.Context, j memrec.ConsolidationJob, notAfter time.Time) error {
	if j.Session == "" || j.UserID == "" {
		return fmt.Errorf("memorytest: enqueue consolidation: session and user are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := jobKey{j.Session, j.UserID}
	cur, ok := s.jobs[k]
	if !ok {
		cur = &job{ConsolidationJob: memrec.ConsolidationJob{Session: j.Session, UserID: j.UserID}}
		s.jobs[k] = cur
	}
	cur.Channel, cur.Gen = j.Channel, cur.Gen+1
	if !cur.pending {
		cur.DueAt, cur.notAfter, cur.pending = j.DueAt, notAfter, true
	} else {
		cur.DueAt = j.DueAt
		if cur.DueAt.After(cur.notAfter) {
			cur.DueAt = cur.notAfter
		}
	}
	return nil
}

// ClaimConsolidation takes the earliest due job whose lease is free.
func (s *Store) ClaimConsolidation(ctx context.Context, worker string, now time.Time, lease time.Duration) (memrec.ConsolidationJob, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *job
	for _, j := range s.jobs {
		if j.pending && !j.DueAt.After(now) && !j.LeaseUntil.After(now) && (best == nil || j.DueAt.Before(best.DueAt)) {
			best = j
		}
	}
	if best == nil {
		return memrec.ConsolidationJob{}, false, nil
	}
	best.Worker, best.LeaseUntil, best.Attempts = worker, now.Add(lease), best.Attempts+1
	return best.ConsolidationJob, true, nil
}

func (s *Store) held(j memrec.ConsolidationJob) (*job, error) {
	cur, ok := s.jobs[jobKey{j.Session, j.UserID}]
	if !ok || cur.Worker != j.Worker || !cur.LeaseUntil.Equal(j.LeaseUntil) {
		return nil, memrec.ErrLeaseLost
	}
	return cur, nil
}

// CompleteConsolidation applies res and advances the job's cursor.
func (s *Store) CompleteConsolidation(ctx context.Context, j memrec.ConsolidationJob, res memrec.ConsolidationResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.held(j)
	if err != nil {
		return err
	}
	for _, m := range append(slices.Clone(res.Insert), res.Update...) {
		s.mems[m.ID] = m
	}
	for _, sp := range res.Supersede {
		if m, ok := s.mems[sp.Old]; ok && m.SupersededBy == "" {
			m.SupersededBy, m.SupersededAt = sp.New, sp.At
			s.mems[sp.Old] = m
		}
	}
	cur.Cursor = max(cur.Cursor, res.Cursor)
	cur.Worker, cur.LeaseUntil, cur.Attempts, cur.LastError = "", time.Time{}, 0, ""
	if cur.Gen == j.Gen {
		cur.pending = false
	}
	return nil
}

// ReleaseConsolidation frees the lease; a zero retryAt drops the pending job.
func (s *Store) ReleaseConsolidation(ctx context.Context, j memrec.ConsolidationJob, retryAt time.Time, errText string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.held(j)
	if err != nil {
		return err
	}
	cur.Worker, cur.LeaseUntil, cur.LastError = "", time.Time{}, errText
	if retryAt.IsZero() {
		cur.pending = false
	} else {
		cur.DueAt = retryAt
	}
	return nil
}

// Memories returns the current memories of owner, for assertions.
func (s *Store) Memories(owner string) []memrec.Memory {
	ms, _ := s.ListMemories(context.Background(), memrec.MemoryFilter{Owners: []string{owner}})
	return ms
}
