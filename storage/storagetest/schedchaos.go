package storagetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
)

// ChaosStore is what the chaos test's processes use: the schedule store and the event dedupe
// the dispatcher would claim each slot's event key in.
type ChaosStore interface {
	schedule.Store
	ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error)
	UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error)
}

// chaosEnv names the child's replica; the backend's test passes the database in its own
// variables (env).
const chaosEnv = "ECHOGATE_SCHED_CHAOS_REPLICA"

var chaosStart = time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC) // Berlin falls back at 01:00 UTC

// chaosJobs are the jobs of the chaos run: over 240 virtual minutes, about 430 slots.
func chaosJobs(t testing.TB) []schedule.Job {
	var out []schedule.Job
	for _, sp := range []struct {
		id   string
		spec schedule.Spec
	}{
		{"chaos-every-1m", schedule.Spec{Every: time.Minute}},
		{"chaos-every-2m", schedule.Spec{Every: 2 * time.Minute}},
		{"chaos-berlin-5m", schedule.Spec{Cron: "*/5 * * * *", Timezone: "Europe/Berlin"}},
		{"chaos-berlin-0230", schedule.Spec{Cron: "30 2 * * *", Timezone: "Europe/Berlin"}},
	} {
		j := testJob(sp.id, 0)
		j.Spec, j.Next = sp.spec, time.Time{}
		j, err := schedule.CheckJob(j, schedule.Limits{}, chaosStart)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// SchedulerChaosChild is the body of a chaos child process: it reads virtual times from stdin,
// one per line, runs a worker pass at each and prints "done <unix>" after it. The parent
// SIGKILLs it at random instants. Call it from a test that skips unless ChaosChild() is set.
func SchedulerChaosChild(t *testing.T, st ChaosStore) {
	ctx := context.Background()
	clock := scheduletest.NewClock(chaosStart)
	submit := func(ctx context.Context, tr schedule.Trigger) error {
		_, err := st.ClaimEvent(ctx, tr.EventKey, []byte(`{}`), clock.Now())
		return err // a duplicate (false) is handled: success, as the dispatcher answers it
	}
	w, err := schedule.NewWorker(schedule.Config{Replica: os.Getenv(chaosEnv), StaleAfter: 2 * time.Minute, MaxConcurrent: 2}, st, submit, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var unix int64
		if _, err := fmt.Sscan(sc.Text(), &unix); err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		clock.Set(time.Unix(unix, 0))
		for range 10 {
			s, err := w.Tick(ctx)
			if err != nil {
				t.Fatalf("Tick: %v", err)
			}
			if s.Claimed+s.Skipped == 0 {
				break
			}
		}
		fmt.Printf("done %d\n", unix)
	}
}

// ChaosChild reports whether this process is a chaos child.
func ChaosChild() bool { return os.Getenv(chaosEnv) != "" }

type chaosProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	alive bool
}

// RunSchedulerChaos creates the chaos jobs in st and runs `replicas` child processes of this
// test binary (childTest names the test that calls SchedulerChaosChild; env reaches the
// database) over 240 virtual minutes in 20-second steps, SIGKILLing a random child at random
// instants and starting a new one. Every slot must be accepted by the event dedupe exactly
// once: none twice, none missed (each step waits until a live child finished a pass at it, so
// every slot is on time or reclaimed).
func RunSchedulerChaos(t *testing.T, st ChaosStore, childTest string, env []string, replicas int) {
	ctx := context.Background()
	jobs := chaosJobs(t)
	for _, j := range jobs {
		if err := st.CreateJob(ctx, j, 0); err != nil {
			t.Fatal(err)
		}
	}
	end := chaosStart.Add(240 * time.Minute)
	f := &chaosFleet{childTest: childTest, env: env, done: make(chan int64, 64), procs: make([]*chaosProc, replicas)}
	for i := range f.procs {
		f.start(t, i)
	}
	defer f.stop()
	kills := 0
	// The kills go on 5 minutes past end; only slots up to end are checked.
	now := chaosStart.Add(20 * time.Second)
	for ; !now.After(end.Add(5 * time.Minute)); now = now.Add(20 * time.Second) {
		f.send(now)
		if rand.IntN(3) == 0 { // a kill at a random instant of this step's passes
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			i := rand.IntN(replicas)
			_ = f.procs[i].cmd.Process.Kill()
			kills++
			f.start(t, i)
			f.send(now)
		}
		f.waitPass(t, now, 1)
	}
	// Then a calm tail, as after a deploy: no kills, and every child finishes each pass, for
	// longer than StaleAfter (2 minutes), so a claim the last kills orphaned is taken over and
	// submitted before the slots are read. (Waiting for one child's pass there let the check
	// read while the other child was still submitting a slot it had just taken over.)
	for tail := now.Add(3 * time.Minute); !now.After(tail); now = now.Add(20 * time.Second) {
		f.send(now)
		f.waitPass(t, now, replicas)
	}
	total, missed, resubmitted := checkChaosSlots(t, st, jobs, end)
	t.Logf("chaos: %d slots of %d jobs, %d replicas, %d SIGKILLs; %d slots reclaimed after a kill; 0 twice (event dedupe), %d missed",
		total, len(jobs), replicas, kills, resubmitted, missed)
}

// chaosFleet is the chaos run's child processes: procs[i] is replica i's current process, done
// carries the virtual time (unix seconds) of every pass a child reported finished.
type chaosFleet struct {
	childTest string
	env       []string
	done      chan int64
	mu        sync.Mutex // guards the procs' alive
	procs     []*chaosProc
}

// start starts replica i's child process, and a goroutine relaying its "done" lines until it
// exits.
func (f *chaosFleet) start(t *testing.T, i int) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+f.childTest+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), f.env...), fmt.Sprintf("%s=r%d-%d", chaosEnv, i, rand.IntN(1e6)))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	p := &chaosProc{cmd: cmd, in: in, alive: true}
	f.procs[i] = p
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var u int64
			if _, err := fmt.Sscanf(sc.Text(), "done %d", &u); err == nil {
				f.done <- u
			}
		}
		_ = cmd.Wait()
		f.mu.Lock()
		p.alive = false
		f.mu.Unlock()
	}()
}

// send tells every child to run a pass at now.
func (f *chaosFleet) send(now time.Time) {
	for _, p := range f.procs {
		_, _ = fmt.Fprintf(p.in, "%d\n", now.Unix())
	}
}

// waitPass waits until n passes at now finished (n children, when each was sent now once); it
// fails the test after 30 s.
func (f *chaosFleet) waitPass(t *testing.T, now time.Time, n int) {
	deadline := time.After(30 * time.Second)
	for {
		select {
		case u := <-f.done:
			if u == now.Unix() {
				if n--; n == 0 {
					return
				}
			}
		case <-deadline:
			t.Fatalf("passes at %v: %d more to finish after 30s", now, n)
		}
	}
}

// stop closes every child's stdin and kills it.
func (f *chaosFleet) stop() {
	for _, p := range f.procs {
		_ = p.in.Close()
		_ = p.cmd.Process.Kill()
	}
}

// checkChaosSlots checks that every slot of every job up to end was accepted once (the event
// dedupe makes a second submission a duplicate) and none is left claimed but not submitted; it
// returns the slots, those missed, and those reclaimed after their worker was killed.
func checkChaosSlots(t *testing.T, st ChaosStore, jobs []schedule.Job, end time.Time) (total, missed, resubmitted int) {
	t.Helper()
	ctx := context.Background()
	evs, err := st.UnfinishedEvents(ctx, end.Add(24*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	accepted := map[string]bool{}
	for _, e := range evs {
		accepted[e.Key] = true
	}
	for _, j := range jobs {
		for _, s := range slotsIn(t, j.Spec, chaosStart, end) {
			total++
			if !accepted[schedule.EventKey(j.ID, s)] {
				missed++
				t.Errorf("slot %s of %s never ran", s, j.ID)
			}
		}
		runs, _ := st.ListRuns(ctx, j.ID, 0)
		for _, r := range runs {
			if !r.Slot.After(end) && r.SubmittedAt.IsZero() {
				t.Errorf("run %s is still claimed, not submitted, after the run", r.EventKey)
			}
			if !r.ClaimedAt.Equal(r.Slot) && r.ClaimedAt.Sub(r.Slot) > time.Minute {
				resubmitted++ // reclaimed after its worker was killed
			}
		}
	}
	if total < 200 {
		t.Errorf("chaos run covered %d slots, want at least 200", total)
	}
	return total, missed, resubmitted
}
