package scheduletest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
)

// MemStore is an in-memory schedule.Store for tests of the packages that may not import the
// real stores (the pipeline's). storage/storagetest checks it with the suite the real stores
// pass.
type MemStore struct {
	mu   sync.Mutex
	jobs map[string]schedule.Job
	runs map[string]map[int64]schedule.Run // job id → slot (unix µs) → run
	now  func() time.Time
}

var _ schedule.Store = (*MemStore)(nil)

// NewMemStore returns an empty store; now stamps records whose time was left zero (nil: time.Now).
func NewMemStore(now func() time.Time) *MemStore {
	if now == nil {
		now = time.Now
	}
	return &MemStore{jobs: map[string]schedule.Job{}, runs: map[string]map[int64]schedule.Run{}, now: now}
}

func (m *MemStore) stamp(t time.Time) time.Time {
	if t.IsZero() {
		t = m.now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

func normJob(j schedule.Job) schedule.Job {
	j.Spec.At, j.Next, j.NotBefore, j.LastRunAt = utc(j.Spec.At), utc(j.Next), utc(j.NotBefore), utc(j.LastRunAt)
	j.CreatedAt, j.UpdatedAt = utc(j.CreatedAt), utc(j.UpdatedAt)
	return j
}

func notFound(what string) error {
	return fmt.Errorf("scheduletest: %s: %w", what, echogate.ErrNotFound)
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scheduletest: %w", err)
	}
	return nil
}

// PutConfigJob creates or updates a config job; see schedule.JobStore.
func (m *MemStore) PutConfigJob(ctx context.Context, j schedule.Job) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j = normJob(j)
	j.UpdatedAt = m.stamp(j.UpdatedAt)
	old, ok := m.jobs[j.ID]
	if !ok {
		j.CreatedAt = j.UpdatedAt
		m.jobs[j.ID] = j
		return nil
	}
	if old.Spec.Key() == j.Spec.Key() {
		j.Next = old.Next
	}
	j.Paused, j.NotBefore, j.Failures = old.Paused, old.NotBefore, old.Failures
	j.LastOutcome, j.LastError, j.LastRunAt, j.CreatedAt = old.LastOutcome, old.LastError, old.LastRunAt, old.CreatedAt
	m.jobs[j.ID] = j
	return nil
}

// CreateJob adds a chat job within its owner's limit; see schedule.JobStore.
func (m *MemStore) CreateJob(ctx context.Context, j schedule.Job, maxPerUser int) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.jobs[j.ID]; ok {
		return fmt.Errorf("scheduletest: create job %q: already exists", j.ID)
	}
	if maxPerUser > 0 {
		n := 0
		for _, o := range m.jobs {
			if o.Owner == j.Owner && !o.Next.IsZero() {
				n++
			}
		}
		if n >= maxPerUser {
			return fmt.Errorf("%w: %s has %d scheduled jobs (scheduler.max_per_user %d); cancel one first", schedule.ErrLimit, j.Owner, n, maxPerUser)
		}
	}
	j = normJob(j)
	j.CreatedAt = m.stamp(j.CreatedAt)
	j.UpdatedAt = j.CreatedAt
	j.Failures, j.NotBefore, j.LastOutcome, j.LastError, j.LastRunAt = 0, time.Time{}, "", "", time.Time{}
	m.jobs[j.ID] = j
	return nil
}

// GetJob returns a job.
func (m *MemStore) GetJob(ctx context.Context, id string) (schedule.Job, error) {
	if err := ctxErr(ctx); err != nil {
		return schedule.Job{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return j, notFound("job " + id)
	}
	return j, nil
}

// ListJobs lists owner's jobs (all when empty), by id.
func (m *MemStore) ListJobs(ctx context.Context, owner string) ([]schedule.Job, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []schedule.Job
	for _, j := range m.jobs {
		if owner == "" || j.Owner == owner {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// DeleteJob removes a job and its runs.
func (m *MemStore) DeleteJob(ctx context.Context, id string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.jobs[id]; !ok {
		return notFound("job " + id)
	}
	delete(m.jobs, id)
	delete(m.runs, id)
	return nil
}

// SetPaused pauses or resumes a job; see schedule.JobStore.
func (m *MemStore) SetPaused(ctx context.Context, id string, paused bool, next, at time.Time) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return notFound("job " + id)
	}
	j.Paused = paused
	if !paused {
		j.Failures, j.NotBefore = 0, time.Time{}
	}
	if !next.IsZero() {
		j.Next = utc(next)
	}
	j.UpdatedAt = m.stamp(at)
	m.jobs[id] = j
	return nil
}
