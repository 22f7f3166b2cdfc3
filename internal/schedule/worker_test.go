package schedule_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
)

var t0 = time.Date(2026, 12, 7, 8, 59, 30, 0, time.UTC)

func newJob(t *testing.T, st schedule.Store, id string, spec schedule.Spec, maxFailures int) schedule.Job {
	t.Helper()
	j, err := schedule.CheckJob(schedule.Job{ID: id, Owner: "slack:T1:U1", Deliver: "slack:C1", Prompt: "check", Spec: spec, MaxFailures: maxFailures}, schedule.Limits{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateJob(context.Background(), j, 0); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestFailingSubmitBacksOffAndPausesOnce: a submit that keeps failing finishes each run as
// failed, backs off (1m, 2m) and pauses the job at max_failures with one OnPause call.
func TestFailingSubmitBacksOffAndPausesOnce(t *testing.T) {
	ctx := context.Background()
	st := scheduletest.NewMemStore(nil)
	clock := scheduletest.NewClock(t0)
	newJob(t, st, "flaky", schedule.Spec{Every: time.Minute}, 3)
	var submits, pauses atomic.Int32
	fail := func(context.Context, schedule.Trigger) error { submits.Add(1); return errors.New("dispatcher full") }
	w, _ := schedule.NewWorker(schedule.Config{OnPause: func(_ context.Context, j schedule.Job) { pauses.Add(1) }}, st, fail, clock, nil)
	for range 30 { // 15 minutes in 30s steps
		clock.Advance(30 * time.Second)
		if _, err := w.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := st.GetJob(ctx, "flaky")
	// Failures at 09:00, then not before 09:01 (+1m), then 09:03 (+2m): the third pauses.
	if submits.Load() != 3 || pauses.Load() != 1 || !j.Paused || j.Failures != 3 || j.LastOutcome != schedule.OutcomeFailed || !strings.Contains(j.LastError, "dispatcher full") {
		t.Errorf("after 15 minutes of failing submits: %d submits, %d pauses, job %+v; want 3, 1, paused with failures 3 and the error", submits.Load(), pauses.Load(), j)
	}
	runs, _ := st.ListRuns(ctx, "flaky", 0)
	var slots []string
	for _, r := range runs {
		slots = append(slots, r.Slot.Format("15:04"))
	}
	if got, want := strings.Join(slots, " "), "09:03 09:01 09:00"; got != want {
		t.Errorf("failed runs' slots = %s, want %s (back-off 1m, 2m)", got, want)
	}
}

// TestSubmissionsAreBounded: at most MaxConcurrent submissions run at once.
func TestSubmissionsAreBounded(t *testing.T) {
	ctx := context.Background()
	st := scheduletest.NewMemStore(nil)
	clock := scheduletest.NewClock(t0)
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		newJob(t, st, id, schedule.Spec{Every: time.Minute}, 0)
	}
	var mu sync.Mutex
	in, peak := 0, 0
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	submit := func(context.Context, schedule.Trigger) error {
		mu.Lock()
		in++
		peak = max(peak, in)
		mu.Unlock()
		entered <- struct{}{}
		<-release
		mu.Lock()
		in--
		mu.Unlock()
		return nil
	}
	w, _ := schedule.NewWorker(schedule.Config{MaxConcurrent: 2}, st, submit, clock, nil)
	clock.Advance(time.Minute)
	done := make(chan schedule.Stats)
	go func() { s, _ := w.Tick(ctx); done <- s }()
	<-entered
	<-entered // two in flight, both held
	for i := range 7 {
		release <- struct{}{}
		if i < 5 {
			<-entered // one more starts only as one ends
		}
	}
	s := <-done
	if peak != 2 || s.Submitted != 7 {
		t.Errorf("peak submissions in flight = %d, submitted %d; want 2 and 7", peak, s.Submitted)
	}
}

func TestRunNow(t *testing.T) {
	ctx := context.Background()
	st := scheduletest.NewMemStore(nil)
	clock := scheduletest.NewClock(t0)
	j := newJob(t, st, "digest", schedule.Spec{Cron: "0 9 * * *"}, 0)
	var got []schedule.Trigger
	w, _ := schedule.NewWorker(schedule.Config{}, st, func(_ context.Context, tr schedule.Trigger) error { got = append(got, tr); return nil }, clock, nil)
	tr, err := w.RunNow(ctx, "digest")
	if err != nil || !tr.Manual || !tr.Slot.Equal(t0) {
		t.Fatalf("RunNow = %+v, %v; want a manual run at %v", tr, err, t0)
	}
	if _, err := w.RunNow(ctx, "digest"); err == nil {
		t.Error("a second RunNow in the same second succeeded")
	}
	if cur, _ := st.GetJob(ctx, "digest"); !cur.Next.Equal(j.Next) {
		t.Errorf("RunNow moved the cursor to %v, want it kept at %v", cur.Next, j.Next)
	}
	clock.Advance(time.Minute) // 09:00:30: the scheduled slot still runs
	if _, err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[1].Slot.Equal(j.Next) {
		t.Errorf("submissions = %+v; want the manual run, then the 09:00 slot", got)
	}
	_ = st.SetPaused(ctx, "digest", true, time.Time{}, t0)
	if _, err := w.RunNow(ctx, "digest"); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Errorf("RunNow of a paused job = %v, want an error saying it is paused", err)
	}
}

func TestChatJob(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	p := schedule.Place{Owner: "slack:T1:U1", Deliver: "slack:C1/1700000000.000100", Agent: "default"}
	j, err := schedule.ChatJob(schedule.ToolArgs{Prompt: "renew the cert", At: "in 10m"}, p, "r1", schedule.Limits{}, now)
	if err != nil || !j.Next.Equal(now.Add(10*time.Minute)) || j.Owner != p.Owner || j.Deliver != p.Deliver || j.Agent != "default" {
		t.Fatalf("ChatJob(in 10m) = %+v, %v", j, err)
	}
	if (schedule.ToolArgs{At: "in 10m"}).Recurring() || !(schedule.ToolArgs{Every: "2h"}).Recurring() {
		t.Error("Recurring: a one-shot is not recurring, an every is")
	}
	for args, want := range map[schedule.ToolArgs]string{
		{At: "in 10m"}:                                  "prompt is empty",
		{Prompt: "x", Every: "often"}:                   "every \"often\"",
		{Prompt: "x", Every: "10s"}:                     "below scheduler.min_interval",
		{Prompt: "x", At: "yesterday"}:                  "RFC 3339",
		{Prompt: "x", Cron: "0 9 * * 1-5"}:              "",
		{Prompt: "x", Cron: "0 9 * * 1-5", Every: "1h"}: "exactly one",
	} {
		_, err := schedule.ChatJob(args, p, "id", schedule.Limits{}, now)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("ChatJob(%+v) = %v, want %q", args, err, want)
		}
	}
}

func TestSyncConfigJobs(t *testing.T) {
	ctx := context.Background()
	st := scheduletest.NewMemStore(nil)
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	digest := schedule.Job{Name: "ops-digest", Deliver: "slack:C1", Prompt: "digest", Spec: schedule.Spec{Cron: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"}}
	once := schedule.Job{Name: "xmas", Deliver: "slack:C1", Prompt: "hi", Spec: schedule.Spec{At: now.Add(time.Hour)}}
	if err := schedule.SyncConfigJobs(ctx, st, []schedule.Job{digest, once}, schedule.Limits{}, now); err != nil {
		t.Fatal(err)
	}
	j, err := st.GetJob(ctx, schedule.ConfigID("ops-digest"))
	if err != nil || j.Owner != schedule.ConfigOwner || !j.Next.Equal(time.Date(2026, 12, 8, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("synced job = %+v, %v; want owner config, next Tue 09:00 Berlin", j, err)
	}
	// The one-shot runs; a day later the config is reloaded: its past `at` is accepted, the
	// removed job goes, a new bad one is reported by name.
	clock := scheduletest.NewClock(now.Add(time.Hour + time.Second))
	w, _ := schedule.NewWorker(schedule.Config{}, st, func(context.Context, schedule.Trigger) error { return nil }, clock, nil)
	if s, _ := w.Tick(ctx); s.Submitted != 1 {
		t.Fatalf("the one-shot did not run: %+v", s)
	}
	bad := schedule.Job{Name: "spam", Deliver: "slack:C1", Prompt: "x", Spec: schedule.Spec{Every: time.Second}}
	err = schedule.SyncConfigJobs(ctx, st, []schedule.Job{once, bad}, schedule.Limits{}, now.Add(24*time.Hour))
	if err == nil || !strings.Contains(err.Error(), "schedules: spam:") || strings.Contains(err.Error(), "xmas") {
		t.Errorf("SyncConfigJobs = %v; want one error naming spam only", err)
	}
	jobs, _ := st.ListJobs(ctx, schedule.ConfigOwner)
	if len(jobs) != 1 || jobs[0].Name != "xmas" || !jobs[0].Next.IsZero() {
		t.Errorf("config jobs after reload = %+v; want only xmas, done", jobs)
	}
}

// failingClaims fails ClaimSlot for one job.
type failingClaims struct {
	*scheduletest.MemStore
	job string
}

func (f failingClaims) ClaimSlot(ctx context.Context, c schedule.Claim) (bool, error) {
	if c.JobID == f.job {
		return false, errors.New("disk I/O error")
	}
	return f.MemStore.ClaimSlot(ctx, c)
}

// TestClaimErrorKeepsOtherSlots: a claim that fails does not keep the slots the pass claimed
// from being submitted (left claimed, they would wait StaleAfter for a takeover).
func TestClaimErrorKeepsOtherSlots(t *testing.T) {
	ctx := context.Background()
	mem := scheduletest.NewMemStore(nil)
	clock := scheduletest.NewClock(t0)
	for _, id := range []string{"a", "b", "c"} {
		newJob(t, mem, id, schedule.Spec{Every: time.Minute}, 0)
	}
	var got []string
	w, _ := schedule.NewWorker(schedule.Config{MaxConcurrent: 1}, failingClaims{mem, "b"}, func(_ context.Context, tr schedule.Trigger) error {
		got = append(got, tr.Job.ID)
		return nil
	}, clock, nil)
	clock.Advance(time.Minute)
	st, err := w.Tick(ctx)
	if err == nil || !strings.Contains(err.Error(), "disk I/O error") {
		t.Errorf("Tick error = %v, want the failed claim's", err)
	}
	if strings.Join(got, ",") != "a,c" || st.Submitted != 2 {
		t.Errorf("submitted %v (%+v), want a,c", got, st)
	}
}
