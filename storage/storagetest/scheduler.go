package storagetest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
)

// RunScheduler runs schedule.Workers on two handles of one database (two replicas, or two
// processes on one SQLite file) on a fake clock: every slot the catch-up policy says to run
// runs exactly once, also across downtime and a worker killed between claim and submit.
func RunScheduler(t *testing.T, open OpenSchedules) {
	t.Helper()
	t.Run("TwoWorkersExactlyOnce", func(t *testing.T) { a, b := open(t); schedTwoWorkers(t, a, b) })
	t.Run("KilledBetweenClaimAndSubmit", func(t *testing.T) { a, b := open(t); schedKilled(t, a, b) })
	t.Run("RunLoopOwnsItsGoroutines", func(t *testing.T) { a, _ := open(t); schedRunLoop(t, a) })
}

// dispatcher stands in for the pipeline's dispatcher: its event dedupe accepts each event key
// once, as ClaimEvent does, and answers a duplicate with success (the event is handled).
type dispatcher struct {
	mu        sync.Mutex
	accepted  map[string]schedule.Trigger
	submitted map[string]int
	recovered int
}

func newDispatcher() *dispatcher {
	return &dispatcher{accepted: map[string]schedule.Trigger{}, submitted: map[string]int{}}
}

func (d *dispatcher) submit(_ context.Context, t schedule.Trigger) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.submitted[t.EventKey]++
	if t.Recovered {
		d.recovered++
	}
	if _, dup := d.accepted[t.EventKey]; !dup {
		d.accepted[t.EventKey] = t
	}
	return nil
}

// ran returns the accepted slots per job, sorted.
func (d *dispatcher) ran() map[string][]time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string][]time.Time{}
	for _, t := range d.accepted {
		out[t.Job.ID] = append(out[t.Job.ID], t.Slot)
	}
	for _, s := range out {
		sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	}
	return out
}

type schedCase struct {
	job  schedule.Job
	want []time.Time
}

// slotsIn lists a spec's slots in (from, to].
func slotsIn(t *testing.T, spec schedule.Spec, from, to time.Time) []time.Time {
	t.Helper()
	sch, err := schedule.Of(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for s, ok := sch.Next(from); ok && !s.After(to); s, ok = sch.Next(s) {
		out = append(out, s)
	}
	return out
}

func schedTwoWorkers(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	// Berlin falls back at 01:00 UTC on 2026-10-25 and New York on 2026-11-01; the run covers
	// the first: 02:00-03:00 Berlin time happens twice.
	var sp twoWorkerSpan
	sp.start = time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)
	sp.upTo = sp.start.Add(5 * time.Hour)                 // first stretch of ticks
	sp.downTo = sp.upTo.Add(2*time.Hour + 10*time.Minute) // downtime: no worker runs
	sp.end = sp.downTo.Add(2 * time.Hour)
	clock := scheduletest.NewClock(sp.start)
	cases := twoWorkerJobs(t, ctx, a, sp)
	d := newDispatcher()
	cfg := schedule.Config{Grace: time.Minute, MaxConcurrent: 3, Batch: 4}
	wa, err := schedule.NewWorker(withReplica(cfg, "a"), a, d.submit, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := schedule.NewWorker(withReplica(cfg, "b"), b, d.submit, clock, nil)
	for clock.Now().Before(sp.end) {
		clock.Advance(20 * time.Second)
		if now := clock.Now(); now.After(sp.upTo) && now.Before(sp.downTo) {
			continue // down: nobody ticks
		}
		tickUntilIdle(t, ctx, wa, wb)
	}
	checkRanOnce(t, d, cases)
}

// twoWorkerSpan is schedTwoWorkers' timeline: workers tick from start to upTo, none runs until
// downTo, then they tick again until end.
type twoWorkerSpan struct{ start, upTo, downTo, end time.Time }

// twoWorkerJobs creates schedTwoWorkers' jobs in s (intervals, cron in two time zones across
// Berlin's fall back, one-shots due while up, in the downtime within and past their lateness)
// and the slots each must run over sp.
func twoWorkerJobs(t *testing.T, ctx context.Context, s schedule.Store, sp twoWorkerSpan) []schedCase {
	t.Helper()
	once := schedule.CatchUp{Policy: schedule.CatchUpOnce, MaxLateness: time.Hour}
	skip := schedule.CatchUp{Policy: schedule.CatchUpSkip}
	specs := []struct {
		id   string
		spec schedule.Spec
		cu   schedule.CatchUp
	}{
		{"every-1m", schedule.Spec{Every: time.Minute}, once},
		{"every-5m-skip", schedule.Spec{Every: 5 * time.Minute}, skip},
		{"berlin-2m", schedule.Spec{Cron: "*/2 * * * *", Timezone: "Europe/Berlin"}, once},
		{"berlin-0230", schedule.Spec{Cron: "30 2 * * *", Timezone: "Europe/Berlin"}, once},
		{"ny-hourly", schedule.Spec{Cron: "0 * * * *", Timezone: "America/New_York"}, once},
		{"at-up", schedule.Spec{At: sp.start.Add(90 * time.Minute)}, once},
		{"at-down", schedule.Spec{At: sp.upTo.Add(100 * time.Minute)}, once}, // 30 min late at restart: runs
		{"at-lost", schedule.Spec{At: sp.upTo.Add(20 * time.Minute)}, once},  // 1h50 late: too late
	}
	var cases []schedCase
	for _, spec := range specs {
		j := testJob(spec.id, 0)
		j.Spec, j.CatchUp, j.Next = spec.spec, spec.cu, time.Time{}
		j, err := schedule.CheckJob(j, schedule.Limits{}, sp.start)
		if err != nil {
			t.Fatalf("CheckJob(%s): %v", spec.id, err)
		}
		if err := s.CreateJob(ctx, j, 0); err != nil {
			t.Fatal(err)
		}
		// Expected: every slot while up; after the downtime the latest missed slot if the
		// policy and its lateness allow; then every slot again.
		want := slotsIn(t, j.Spec, sp.start, sp.upTo)
		missed := slotsIn(t, j.Spec, sp.upTo, sp.downTo)
		if n := len(missed); n > 0 {
			last := missed[n-1]
			window := time.Minute // the worker's Grace
			if spec.cu.Policy == schedule.CatchUpOnce {
				window = time.Hour
			}
			if !last.Before(sp.downTo.Add(-window)) {
				want = append(want, last)
			}
		}
		want = append(want, slotsIn(t, j.Spec, sp.downTo, sp.end)...)
		cases = append(cases, schedCase{j, want})
	}
	return cases
}

// tickUntilIdle runs the workers' passes concurrently, each until nothing is due.
func tickUntilIdle(t *testing.T, ctx context.Context, workers ...*schedule.Worker) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A pass takes at most Batch jobs: pass until nothing is due.
			for range 10 {
				st, err := w.Tick(ctx)
				if err != nil {
					t.Errorf("Tick: %v", err)
					return
				}
				if st.Claimed+st.Skipped == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// checkRanOnce checks that every case ran exactly its wanted slots and every slot was
// submitted once.
func checkRanOnce(t *testing.T, d *dispatcher, cases []schedCase) {
	t.Helper()
	ran := d.ran()
	total := 0
	for _, c := range cases {
		got := ran[c.job.ID]
		total += len(got)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("job %s ran slots\n %v\nwant\n %v", c.job.ID, got, c.want)
		}
	}
	for key, n := range d.submitted {
		if n != 1 {
			t.Errorf("slot %s submitted %d times, want 1 (no worker died)", key, n)
		}
	}
	if total < 200 {
		t.Errorf("the run covered %d slots, want at least 200", total)
	}
	t.Logf("two workers: %d slots of %d jobs ran once each; 0 twice, 0 missed", total, len(cases))
}

func withReplica(c schedule.Config, r string) schedule.Config { c.Replica = r; return c }

func schedKilled(t *testing.T, a, b schedule.Store) {
	ctx := context.Background()
	start := time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC)
	clock := scheduletest.NewClock(start)
	mk := func(id string) schedule.Job {
		j := testJob(id, time.Hour)
		j.Next = time.Time{}
		j, err := schedule.CheckJob(j, schedule.Limits{}, start)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.CreateJob(ctx, j, 0); err != nil {
			t.Fatal(err)
		}
		return j
	}
	before, after := mk("killed-before-submit"), mk("killed-after-submit")
	d := newDispatcher()
	// Worker a dies in Submit: for one job before the dispatcher accepted the slot, for the
	// other after it did but before MarkSubmitted was written.
	dying, kill := context.WithCancel(ctx)
	killer := func(c context.Context, tr schedule.Trigger) error {
		if tr.Job.ID == after.ID {
			_ = d.submit(c, tr)
		}
		kill()
		return c.Err()
	}
	cfg := schedule.Config{StaleAfter: 2 * time.Minute, MaxConcurrent: 1}
	wa, _ := schedule.NewWorker(withReplica(cfg, "a"), a, killer, clock, nil)
	wb, _ := schedule.NewWorker(withReplica(cfg, "b"), b, d.submit, clock, nil)
	clock.Advance(time.Minute + time.Second) // 09:00:01: both jobs due
	if _, err := wa.Tick(dying); err == nil {
		t.Log("the killed pass reported no error")
	}
	claimed := claimedByKilled(t, ctx, b, before, after)
	// Not stale yet: the survivor leaves the claims alone.
	clock.Advance(time.Minute)
	if _, err := wb.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(d.submitted); n > 1 {
		t.Errorf("a fresh claim was taken over: submitted %v", d.submitted)
	}
	// Stale: the survivor takes each over once and submits it under the same key.
	clock.Advance(2 * time.Minute)
	st, err := wb.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Recovered != claimed {
		t.Errorf("recovered %d claims, want %d", st.Recovered, claimed)
	}
	clock.Advance(5 * time.Minute)
	if _, err := wb.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, ctx, b, d, before, after)
}

// claimedByKilled checks what the store tells after worker a died between claim and submit:
// the jobs' slots claimed by a, none submitted, no outcome. It returns how many were claimed.
func claimedByKilled(t *testing.T, ctx context.Context, s schedule.Store, jobs ...schedule.Job) int {
	t.Helper()
	var claimed int
	for _, j := range jobs {
		runs, err := s.ListRuns(ctx, j.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			claimed++
			if r.ClaimedBy != "a" || !r.SubmittedAt.IsZero() || r.Outcome != "" {
				t.Errorf("after the kill, run %+v; want claimed by a, not submitted, no outcome", r)
			}
		}
	}
	if claimed == 0 {
		t.Fatal("the killed worker claimed nothing; the test did not kill between claim and submit")
	}
	return claimed
}

// checkRecovered checks that survivor b took over the killed worker's claims: each job ran its
// slot once, claimed and submitted by b, and the slot the dispatcher had accepted before the
// kill (after's) was submitted a second time, as a duplicate the dispatcher drops.
func checkRecovered(t *testing.T, ctx context.Context, s schedule.Store, d *dispatcher, before, after schedule.Job) {
	t.Helper()
	ran := d.ran()
	for _, j := range []schedule.Job{before, after} {
		if got := ran[j.ID]; len(got) != 1 || !got[0].Equal(j.Next) {
			t.Errorf("job %s ran %v, want exactly its slot %v once", j.ID, got, j.Next)
		}
		runs, _ := s.ListRuns(ctx, j.ID, 0)
		if len(runs) != 1 || runs[0].SubmittedAt.IsZero() || runs[0].ClaimedBy != "b" {
			t.Errorf("job %s runs after recovery = %+v; want one, submitted, claimed by b", j.ID, runs)
		}
	}
	if d.submitted[schedule.EventKey(after.ID, after.Next)] != 2 {
		t.Errorf("the slot accepted before the kill was submitted %d times, want 2 (once more by recovery, a duplicate the dispatcher dropped)", d.submitted[schedule.EventKey(after.ID, after.Next)])
	}
}

func schedRunLoop(t *testing.T, s schedule.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Date(2026, 12, 7, 8, 59, 30, 0, time.UTC)
	clock := scheduletest.NewClock(start)
	j := testJob("loop", time.Minute)
	j.Next = time.Time{}
	j, err := schedule.CheckJob(j, schedule.Limits{}, start)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, j, 0); err != nil {
		t.Fatal(err)
	}
	got := make(chan schedule.Trigger, 10)
	w, _ := schedule.NewWorker(schedule.Config{}, s, func(_ context.Context, tr schedule.Trigger) error { got <- tr; return nil }, clock, nil)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for i := range 3 {
		<-clock.Added() // the worker sleeps until the next slot
		clock.Advance(time.Minute)
		tr := <-got
		if want := j.Next.Add(time.Duration(i) * time.Minute); !tr.Slot.Equal(want) {
			t.Errorf("run %d: slot %v, want %v", i, tr.Slot, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil after cancel", err)
	}
}
