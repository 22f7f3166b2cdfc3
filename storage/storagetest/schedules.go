package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// OpenSchedules returns two handles on one fresh, migrated database: for PostgreSQL two
// stores (two replicas), for SQLite two stores on one file (two processes).
type OpenSchedules func(t *testing.T) (a, b schedule.Store)

// RunSchedules checks the schedule.Store contract: jobs round-trip, config jobs keep their
// cursor while their spec is unchanged, the per-user limit holds under concurrent creates,
// a slot is claimed once by one of concurrent claimants on two handles, stale claims are taken
// over once, and FinishRun counts failures, backs off and pauses exactly once.
func RunSchedules(t *testing.T, open OpenSchedules) {
	t.Helper()
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, a, b schedule.Store)
	}{
		{"JobRoundTrip", schedJobRoundTrip},
		{"ConfigJobKeepsCursor", schedConfigJobKeepsCursor},
		{"PerUserLimit", schedPerUserLimit},
		{"ClaimSlotOnce", schedClaimSlotOnce},
		{"ConcurrentClaimsOneWinner", schedConcurrentClaims},
		{"ReclaimStale", schedReclaimStale},
		{"FinishRunFailuresPause", schedFinishRun},
		{"DueJobs", schedDueJobs},
		{"UnfinishedRuns", schedUnfinishedRuns},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := open(t)
			tt.fn(t, a, b)
		})
	}
}

var schedBase = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

func testJob(id string, every time.Duration) schedule.Job {
	return schedule.Job{
		ID: id, Owner: "slack:T1:U1", Deliver: "slack:C1/1700000000.000100", Agent: "oncall", Prompt: "digest " + id,
		Spec: schedule.Spec{Every: every}, Session: "isolated", QuietIf: "NOTHING", BudgetUSD: 0.2,
		CatchUp: schedule.CatchUp{Policy: schedule.CatchUpOnce, MaxLateness: time.Hour}, MaxFailures: 3,
		Next: schedBase, CreatedAt: schedBase.Add(-time.Hour), UpdatedAt: schedBase.Add(-time.Hour),
	}
}

func mustJob(t *testing.T, s schedule.Store, id string) schedule.Job {
	t.Helper()
	j, err := s.GetJob(context.Background(), id)
	if err != nil {
		t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

func schedJobRoundTrip(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	want := testJob("rt", 30*time.Minute)
	want.Name = "ops-digest"
	want.Spec = schedule.Spec{Cron: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"}
	if err := a.CreateJob(ctx, want, 0); err != nil {
		t.Fatal(err)
	}
	at := testJob("at", 0)
	at.Spec = schedule.Spec{At: schedBase.Add(25 * time.Hour)}
	if err := a.CreateJob(ctx, at, 0); err != nil {
		t.Fatal(err)
	}
	got := mustJob(t, b, "rt")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetJob(rt) =\n %+v\nwant\n %+v", got, want)
	}
	if got := mustJob(t, b, "at"); !got.Spec.At.Equal(at.Spec.At) || got.Spec.Every != 0 {
		t.Errorf("GetJob(at).Spec = %+v, want at %v", got.Spec, at.Spec.At)
	}
	if err := a.CreateJob(ctx, want, 0); err == nil {
		t.Error("CreateJob of an existing id succeeded")
	}
	other := testJob("other", time.Hour)
	other.Owner = "discord:G1:U2"
	if err := a.CreateJob(ctx, other, 0); err != nil {
		t.Fatal(err)
	}
	for owner, ids := range map[string][]string{"": {"at", "other", "rt"}, "discord:G1:U2": {"other"}, "nobody": nil} {
		jobs, err := b.ListJobs(ctx, owner)
		var gotIDs []string
		for _, j := range jobs {
			gotIDs = append(gotIDs, j.ID)
		}
		if err != nil || !reflect.DeepEqual(gotIDs, ids) {
			t.Errorf("ListJobs(%q) = %v, %v; want %v", owner, gotIDs, err, ids)
		}
	}
	if err := b.DeleteJob(ctx, "rt"); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"GetJob":    func() error { _, err := a.GetJob(ctx, "rt"); return err }(),
		"DeleteJob": a.DeleteJob(ctx, "rt"),
		"SetPaused": a.SetPaused(ctx, "rt", true, time.Time{}, schedBase),
	} {
		checkNotFound(t, what+" of a deleted job", err)
	}
}

func schedConfigJobKeepsCursor(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	j := testJob(schedule.ConfigID("digest"), time.Hour)
	j.Owner = schedule.ConfigOwner
	if err := a.PutConfigJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	// The job ran a slot: its cursor moved on. A reload with the same spec keeps it.
	if ok, err := a.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: j.Next, Next: j.Next.Add(time.Hour), Slot: j.Next, By: "r1", At: j.Next}); !ok || err != nil {
		t.Fatalf("ClaimSlot = %v, %v", ok, err)
	}
	if err := a.SetPaused(ctx, j.ID, true, time.Time{}, j.Next); err != nil {
		t.Fatal(err)
	}
	reload := j
	reload.Prompt = "a new prompt"
	reload.Next = schedBase.Add(10 * time.Hour) // what a fresh computation would say
	if err := b.PutConfigJob(ctx, reload); err != nil {
		t.Fatal(err)
	}
	if got := mustJob(t, a, j.ID); !got.Next.Equal(j.Next.Add(time.Hour)) || got.Prompt != "a new prompt" || !got.Paused {
		t.Errorf("after a reload with the same spec: cursor %v prompt %q paused %v; want cursor %v (kept), the new prompt, still paused", got.Next, got.Prompt, got.Paused, j.Next.Add(time.Hour))
	}
	reload.Spec = schedule.Spec{Every: 2 * time.Hour}
	if err := b.PutConfigJob(ctx, reload); err != nil {
		t.Fatal(err)
	}
	if got := mustJob(t, a, j.ID); !got.Next.Equal(reload.Next) {
		t.Errorf("after a reload with a new spec: cursor %v, want %v", got.Next, reload.Next)
	}
}

func schedPerUserLimit(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	const limit = 3
	var wins atomic.Int32
	race(10, a, b, func(i int, s schedule.Store) {
		err := s.CreateJob(ctx, testJob(fmt.Sprintf("lim-%d", i), time.Hour), limit)
		switch {
		case err == nil:
			wins.Add(1)
		case !errors.Is(err, schedule.ErrLimit):
			t.Errorf("CreateJob over the limit = %v, want ErrLimit", err)
		}
	})
	if wins.Load() != limit {
		t.Errorf("concurrent creates with max_per_user %d: %d succeeded, want %d", limit, wins.Load(), limit)
	}
	// A done one-shot (no slot left) does not count.
	jobs, _ := a.ListJobs(ctx, "slack:T1:U1")
	if _, err := a.ClaimSlot(ctx, schedule.Claim{JobID: jobs[0].ID, Cursor: jobs[0].Next, Slot: jobs[0].Next, By: "r", At: schedBase}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateJob(ctx, testJob("lim-after-done", time.Hour), limit); err != nil {
		t.Errorf("CreateJob after a job finished its slots = %v, want success", err)
	}
}

func schedClaimSlotOnce(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	j := testJob("claim", time.Hour)
	if err := a.CreateJob(ctx, j, 0); err != nil {
		t.Fatal(err)
	}
	c := schedule.Claim{JobID: j.ID, Cursor: j.Next, Next: j.Next.Add(time.Hour), Slot: j.Next, By: "r1", At: j.Next.Add(time.Second)}
	for i, tt := range []struct {
		s    schedule.Store
		c    schedule.Claim
		want bool
	}{
		{a, c, true},
		{b, c, false}, // the cursor moved
		{b, schedule.Claim{JobID: j.ID, Cursor: c.Next, Next: c.Next.Add(time.Hour), Slot: c.Slot, By: "r2", At: c.At}, false},  // slot taken
		{b, schedule.Claim{JobID: j.ID, Cursor: c.Next, Next: c.Next.Add(2 * time.Hour), Skip: true, By: "r2", At: c.At}, true}, // skip: cursor only
		{a, schedule.Claim{JobID: "nope", Cursor: c.Next, Slot: c.Next, By: "r1", At: c.At}, false},
	} {
		if got, err := tt.s.ClaimSlot(ctx, tt.c); got != tt.want || err != nil {
			t.Errorf("claim %d: ClaimSlot(%+v) = %v, %v; want %v", i, tt.c, got, err, tt.want)
		}
	}
	if got := mustJob(t, a, j.ID); !got.Next.Equal(c.Next.Add(2 * time.Hour)) {
		t.Errorf("cursor = %v, want %v (the lost claim must not have moved it)", got.Next, c.Next.Add(2*time.Hour))
	}
	runs, err := b.ListRuns(ctx, j.ID, 0)
	if err != nil || len(runs) != 1 || !runs[0].Slot.Equal(j.Next) || runs[0].ClaimedBy != "r1" || runs[0].EventKey != schedule.EventKey(j.ID, j.Next) || !runs[0].SubmittedAt.IsZero() {
		t.Fatalf("ListRuns = %+v, %v; want one run of slot %v claimed by r1, unsubmitted", runs, err, j.Next)
	}
	// A paused job's slot cannot be claimed.
	if err := a.SetPaused(ctx, j.ID, true, time.Time{}, schedBase); err != nil {
		t.Fatal(err)
	}
	cur := mustJob(t, a, j.ID).Next
	if ok, err := b.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: cur, Next: cur.Add(time.Hour), Slot: cur, By: "r2", At: cur}); ok || err != nil {
		t.Errorf("ClaimSlot of a paused job = %v, %v; want false", ok, err)
	}
	if err := a.MarkSubmitted(ctx, j.ID, j.Next, schedBase); err != nil {
		t.Fatal(err)
	}
	if err := a.MarkSubmitted(ctx, j.ID, j.Next, schedBase.Add(time.Minute)); err != nil {
		t.Errorf("MarkSubmitted twice = %v, want nil", err)
	}
	checkNotFound(t, "MarkSubmitted of an unclaimed slot", a.MarkSubmitted(ctx, j.ID, j.Next.Add(time.Minute), schedBase))
}

func schedConcurrentClaims(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	j := testJob("race", time.Minute)
	if err := a.CreateJob(ctx, j, 0); err != nil {
		t.Fatal(err)
	}
	// 50 slots; for each, 8 claimants on two handles race with the same decision.
	cursor := j.Next
	for range 50 {
		var wins atomic.Int32
		race(8, a, b, func(i int, s schedule.Store) {
			ok, err := s.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: cursor, Next: cursor.Add(time.Minute), Slot: cursor, By: fmt.Sprintf("r%d", i), At: cursor})
			if err != nil {
				t.Errorf("ClaimSlot: %v", err)
			}
			if ok {
				wins.Add(1)
			}
		})
		if wins.Load() != 1 {
			t.Fatalf("slot %v: %d claimants won, want exactly 1", cursor, wins.Load())
		}
		cursor = cursor.Add(time.Minute)
	}
	if runs, _ := a.ListRuns(ctx, j.ID, 0); len(runs) != 50 {
		t.Errorf("ListRuns = %d runs, want 50", len(runs))
	}
}

func schedReclaimStale(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	j := testJob("stale", time.Hour)
	if err := a.CreateJob(ctx, j, 0); err != nil {
		t.Fatal(err)
	}
	claimedAt := j.Next
	if ok, err := a.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: j.Next, Next: j.Next.Add(time.Hour), Slot: j.Next, By: "dead", At: claimedAt}); !ok || err != nil {
		t.Fatalf("ClaimSlot = %v, %v", ok, err)
	}
	if runs, err := b.ReclaimStale(ctx, claimedAt, "r2", claimedAt.Add(time.Minute), 10); err != nil || len(runs) != 0 {
		t.Errorf("ReclaimStale of a fresh claim = %+v, %v; want none", runs, err)
	}
	var taken atomic.Int32
	var wg sync.WaitGroup
	now := claimedAt.Add(5 * time.Minute)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			runs, err := s.ReclaimStale(ctx, now.Add(-2*time.Minute), fmt.Sprintf("r%d", i), now, 10)
			if err != nil {
				t.Errorf("ReclaimStale: %v", err)
			}
			for _, r := range runs {
				if r.JobID != j.ID || !r.Slot.Equal(j.Next) || r.EventKey != schedule.EventKey(j.ID, j.Next) || !r.ClaimedAt.Equal(now) {
					t.Errorf("reclaimed run = %+v, want job %s slot %v claimed at %v", r, j.ID, j.Next, now)
				}
				taken.Add(1)
			}
		}()
	}
	wg.Wait()
	if taken.Load() != 1 {
		t.Errorf("concurrent ReclaimStale took the run %d times, want exactly 1", taken.Load())
	}
	if err := a.MarkSubmitted(ctx, j.ID, j.Next, now); err != nil {
		t.Fatal(err)
	}
	if runs, _ := b.ReclaimStale(ctx, now.Add(time.Hour), "r9", now.Add(2*time.Hour), 10); len(runs) != 0 {
		t.Errorf("ReclaimStale took a submitted run: %+v", runs)
	}
}

// race runs f n times at once, the even calls on store a and the odd ones on b (two replicas),
// and returns when all have.
func race(n int, a, b schedule.Store, f func(i int, s schedule.Store)) {
	var wg sync.WaitGroup
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() { f(i, s) })
	}
	wg.Wait()
}
