package scheduletest

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// DueJobs lists the enabled jobs due at now; see schedule.SlotStore.
func (m *MemStore) DueJobs(ctx context.Context, now time.Time, limit int) ([]schedule.Job, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []schedule.Job
	for _, j := range m.jobs {
		if !j.Paused && !j.Next.IsZero() && !j.Next.After(now) && !j.NotBefore.After(now) {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Next.Equal(out[b].Next) {
			return out[a].Next.Before(out[b].Next)
		}
		return out[a].ID < out[b].ID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// NextDue returns the earliest instant an enabled job becomes due.
func (m *MemStore) NextDue(ctx context.Context) (time.Time, bool, error) {
	if err := ctxErr(ctx); err != nil {
		return time.Time{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var best time.Time
	for _, j := range m.jobs {
		if j.Paused || j.Next.IsZero() {
			continue
		}
		at := j.Next
		if j.NotBefore.After(at) {
			at = j.NotBefore
		}
		if best.IsZero() || at.Before(best) {
			best = at
		}
	}
	return best, !best.IsZero(), nil
}

// ClaimSlot claims a slot and moves its job's cursor; see schedule.SlotStore.
func (m *MemStore) ClaimSlot(ctx context.Context, c schedule.Claim) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	if c.JobID == "" || c.By == "" || c.Cursor.IsZero() {
		return false, fmt.Errorf("scheduletest: claim slot: a claim needs a job id, a cursor and a claimant")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[c.JobID]
	if !ok || j.Paused || !j.Next.Equal(utc(c.Cursor)) {
		return false, nil
	}
	if !c.Skip {
		slot := utc(c.Slot)
		if _, taken := m.runs[c.JobID][slot.UnixMicro()]; taken {
			return false, nil
		}
		if m.runs[c.JobID] == nil {
			m.runs[c.JobID] = map[int64]schedule.Run{}
		}
		m.runs[c.JobID][slot.UnixMicro()] = schedule.Run{JobID: c.JobID, Slot: slot, EventKey: schedule.EventKey(c.JobID, slot), ClaimedBy: c.By, ClaimedAt: m.stamp(c.At)}
	}
	j.Next, j.UpdatedAt = utc(c.Next), m.stamp(c.At)
	m.jobs[c.JobID] = j
	return true, nil
}

// MarkSubmitted records that a slot's trigger was handed over.
func (m *MemStore) MarkSubmitted(ctx context.Context, jobID string, slot, at time.Time) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[jobID][utc(slot).UnixMicro()]
	if !ok {
		return notFound("run " + schedule.EventKey(jobID, slot))
	}
	if r.SubmittedAt.IsZero() {
		r.SubmittedAt = m.stamp(at)
		m.runs[jobID][utc(slot).UnixMicro()] = r
	}
	return nil
}

// ReclaimStale takes over claims never submitted; see schedule.SlotStore.
func (m *MemStore) ReclaimStale(ctx context.Context, staleBefore time.Time, by string, now time.Time, limit int) ([]schedule.Run, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []schedule.Run
	for _, runs := range m.runs {
		for k, r := range runs {
			if r.SubmittedAt.IsZero() && r.Outcome == "" && r.ClaimedAt.Before(staleBefore) && (limit <= 0 || len(out) < limit) {
				r.ClaimedBy, r.ClaimedAt = by, m.stamp(now)
				runs[k] = r
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// FinishRun records a run's outcome and updates its job; see schedule.SlotStore.
func (m *MemStore) FinishRun(ctx context.Context, e schedule.RunEnd) (schedule.Finished, error) {
	if err := ctxErr(ctx); err != nil {
		return schedule.Finished{}, err
	}
	if e.JobID == "" || !e.Outcome.Valid() {
		return schedule.Finished{}, fmt.Errorf("scheduletest: finish run: job %q outcome %q: invalid", e.JobID, e.Outcome)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := utc(e.Slot).UnixMicro()
	r, ok := m.runs[e.JobID][k]
	j, jok := m.jobs[e.JobID]
	if !ok || !jok {
		return schedule.Finished{}, notFound("run " + schedule.EventKey(e.JobID, e.Slot))
	}
	if r.Outcome != "" {
		return schedule.Finished{Job: j, Repeat: true}, nil
	}
	at := m.stamp(e.At)
	r.Outcome, r.Error, r.TurnID, r.FinishedAt = e.Outcome, e.Error, e.TurnID, at
	if r.SubmittedAt.IsZero() {
		r.SubmittedAt = at
	}
	m.runs[e.JobID][k] = r
	var f schedule.Finished
	f.Job, f.PausedNow = schedule.ApplyOutcome(j, e, at)
	m.jobs[e.JobID] = f.Job
	return f, nil
}

// ListRuns lists a job's runs, newest slot first.
func (m *MemStore) ListRuns(ctx context.Context, jobID string, limit int) ([]schedule.Run, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []schedule.Run
	for _, r := range m.runs[jobID] {
		out = append(out, r)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Slot.After(out[b].Slot) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// UnfinishedRuns lists submitted runs without an outcome, oldest submission first.
func (m *MemStore) UnfinishedRuns(ctx context.Context, before time.Time, limit int) ([]schedule.Run, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []schedule.Run
	for _, runs := range m.runs {
		for _, r := range runs {
			if !r.SubmittedAt.IsZero() && r.Outcome == "" && r.SubmittedAt.Before(before) {
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].SubmittedAt.Before(out[b].SubmittedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
