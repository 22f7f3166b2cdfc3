package storagetest

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// The schedule suite's checks of outcomes and due jobs (RunSchedules).

func schedFinishRun(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	j := testJob("finish", time.Minute)
	j.MaxFailures = 2
	if err := a.CreateJob(ctx, j, 0); err != nil {
		t.Fatal(err)
	}
	slot := j.Next
	claim := func(s time.Time) {
		t.Helper()
		cur := mustJob(t, a, j.ID).Next
		if ok, err := b.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: cur, Next: s.Add(time.Minute), Slot: s, By: "r", At: s}); !ok || err != nil {
			t.Fatalf("ClaimSlot(%v) = %v, %v", s, ok, err)
		}
	}
	claim(slot)
	end := schedule.RunEnd{JobID: j.ID, Slot: slot, TurnID: "turn-1", Outcome: schedule.OutcomeFailed, Error: "boom", At: slot.Add(10 * time.Second)}
	f, err := a.FinishRun(ctx, end)
	if err != nil || f.PausedNow || f.Repeat || f.Job.Failures != 1 || !f.Job.NotBefore.Equal(end.At.Add(schedule.Backoff(1))) || f.Job.LastOutcome != schedule.OutcomeFailed || f.Job.LastError != "boom" {
		t.Fatalf("FinishRun(failed #1) = %+v, %v; want failures 1, not before %v, not paused", f, err, end.At.Add(schedule.Backoff(1)))
	}
	if f2, err := b.FinishRun(ctx, end); err != nil || !f2.Repeat || f2.Job.Failures != 1 {
		t.Errorf("FinishRun again = %+v, %v; want Repeat with failures still 1", f2, err)
	}
	// The second consecutive failure pauses the job, once.
	claim(slot.Add(time.Minute))
	var paused atomic.Int32
	race(4, a, b, func(_ int, s schedule.Store) {
		f, err := s.FinishRun(ctx, schedule.RunEnd{JobID: j.ID, Slot: slot.Add(time.Minute), Outcome: schedule.OutcomeBudget, At: slot.Add(2 * time.Minute)})
		if err != nil {
			t.Errorf("FinishRun: %v", err)
		}
		if f.PausedNow {
			paused.Add(1)
		}
	})
	got := mustJob(t, a, j.ID)
	if paused.Load() != 1 || !got.Paused || got.Failures != 2 {
		t.Errorf("after max_failures: PausedNow %d times, job paused %v failures %d; want once, true, 2", paused.Load(), got.Paused, got.Failures)
	}
	runs, _ := a.ListRuns(ctx, j.ID, 1)
	if len(runs) != 1 || runs[0].Outcome != schedule.OutcomeBudget || runs[0].SubmittedAt.IsZero() || runs[0].FinishedAt.IsZero() {
		t.Errorf("ListRuns(limit 1) = %+v; want the newest run, finished with budget", runs)
	}
	// Resume clears failures and back-off and sets the cursor.
	resumeAt := slot.Add(time.Hour)
	if err := b.SetPaused(ctx, j.ID, false, resumeAt, resumeAt); err != nil {
		t.Fatal(err)
	}
	got = mustJob(t, a, j.ID)
	if got.Paused || got.Failures != 0 || !got.NotBefore.IsZero() || !got.Next.Equal(resumeAt) {
		t.Errorf("after resume: %+v; want enabled, 0 failures, no back-off, cursor %v", got, resumeAt)
	}
	// A success resets the count; unconfirmed keeps it.
	claim(resumeAt)
	if f, err := a.FinishRun(ctx, schedule.RunEnd{JobID: j.ID, Slot: resumeAt, Outcome: schedule.OutcomeUnconfirmed, At: resumeAt}); err != nil || f.Job.Failures != 0 || f.Job.LastOutcome != schedule.OutcomeUnconfirmed {
		t.Errorf("FinishRun(unconfirmed) = %+v, %v", f, err)
	}
	_, err = a.FinishRun(ctx, schedule.RunEnd{JobID: j.ID, Slot: slot.Add(99 * time.Minute), Outcome: schedule.OutcomeDelivered, At: resumeAt})
	checkNotFound(t, "FinishRun of an unclaimed slot", err)
	if _, err := a.FinishRun(ctx, schedule.RunEnd{JobID: j.ID, Slot: resumeAt, Outcome: "fine", At: resumeAt}); err == nil {
		t.Error("FinishRun with an unknown outcome succeeded")
	}
}

func schedDueJobs(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	if _, ok, err := b.NextDue(ctx); ok || err != nil {
		t.Errorf("NextDue of no jobs = %v, %v; want false", ok, err)
	}
	mk := func(id string, next time.Time) schedule.Job {
		j := testJob(id, time.Hour)
		j.Next = next
		if err := a.CreateJob(ctx, j, 0); err != nil {
			t.Fatal(err)
		}
		return j
	}
	mk("due-1", schedBase)
	mk("due-2", schedBase.Add(-time.Minute))
	mk("later", schedBase.Add(time.Minute))
	p := mk("paused", schedBase.Add(-time.Hour))
	if err := a.SetPaused(ctx, p.ID, true, time.Time{}, schedBase); err != nil {
		t.Fatal(err)
	}
	held := mk("held", schedBase.Add(-2*time.Minute))
	if ok, _ := a.ClaimSlot(ctx, schedule.Claim{JobID: held.ID, Cursor: held.Next, Next: schedBase.Add(-30 * time.Second), Slot: held.Next, By: "r", At: held.Next}); !ok {
		t.Fatal("claim held")
	}
	if _, err := a.FinishRun(ctx, schedule.RunEnd{JobID: held.ID, Slot: held.Next, Outcome: schedule.OutcomeFailed, At: schedBase.Add(-30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.DueJobs(ctx, schedBase, 0)
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	if want := []string{"due-2", "due-1"}; err != nil || !reflect.DeepEqual(ids, want) {
		t.Errorf("DueJobs = %v, %v; want %v (not the later, paused or backed-off ones)", ids, err, want)
	}
	if jobs, _ := b.DueJobs(ctx, schedBase, 1); len(jobs) != 1 {
		t.Errorf("DueJobs(limit 1) = %d jobs", len(jobs))
	}
	if next, ok, err := b.NextDue(ctx); err != nil || !ok || !next.Equal(schedBase.Add(-time.Minute)) {
		t.Errorf("NextDue = %v, %v, %v; want %v", next, ok, err, schedBase.Add(-time.Minute))
	}
}

func schedUnfinishedRuns(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	j := testJob("unfinished", time.Minute)
	if err := a.CreateJob(ctx, j, 0); err != nil {
		t.Fatal(err)
	}
	s0, s1, s2 := j.Next, j.Next.Add(time.Minute), j.Next.Add(2*time.Minute)
	for i, s := range []time.Time{s0, s1, s2} {
		if ok, err := a.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: s, Next: s.Add(time.Minute), Slot: s, By: "r", At: s}); !ok || err != nil {
			t.Fatalf("ClaimSlot(%v) = %v, %v", s, ok, err)
		}
		if i < 2 { // s2 stays claimed, not submitted
			if err := a.MarkSubmitted(ctx, j.ID, s, s.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := a.FinishRun(ctx, schedule.RunEnd{JobID: j.ID, Slot: s0, Outcome: schedule.OutcomeDelivered, At: s0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	runs, err := b.UnfinishedRuns(ctx, s2, 0)
	if err != nil || len(runs) != 1 || !runs[0].Slot.Equal(s1) || runs[0].EventKey != schedule.EventKey(j.ID, s1) {
		t.Errorf("UnfinishedRuns = %+v, %v; want only the submitted, unfinished run of %v", runs, err, s1)
	}
	if runs, _ := b.UnfinishedRuns(ctx, s1, 0); len(runs) != 0 {
		t.Errorf("UnfinishedRuns(before its submission) = %+v, want none", runs)
	}
}
