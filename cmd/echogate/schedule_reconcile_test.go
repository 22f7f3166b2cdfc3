package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
)

// A run whose turn ended but whose outcome a kill lost (between the turn's end and FinishRun)
// is finished at the next start from the turn log: delivered when the turn's posting record
// holds the message id; a run whose turn has not ended is left to the pipeline's replay.
func TestReconcileFinishesRunsFromTheTurnLog(t *testing.T) {
	ctx := context.Background()
	cfg, err := loadConfig("", func(k string) string { return map[string]string{"ECHOGATE_DATA_DIR": t.TempDir()}[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := openStore(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sst := st.(schedule.Store)
	now := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
	clock := scheduletest.NewClock(now.Add(time.Hour))
	c := &core{cfg: cfg, store: st, log: slog.New(slog.DiscardHandler), metrics: metrics.New()}
	s := &scheduler{c: c, st: sst, clock: clock}
	s.cfg.Store(cfg)
	jobs := []schedule.Job{{Name: "done", Prompt: "p", Deliver: "web:ops", Spec: schedule.Spec{Every: time.Hour}},
		{Name: "running", Prompt: "p", Deliver: "web:ops", Spec: schedule.Spec{Every: time.Hour}},
		{Name: "replayed", Prompt: "p", Deliver: "web:ops", Spec: schedule.Spec{Every: time.Hour}}}
	if err := schedule.SyncConfigJobs(ctx, sst, jobs, schedule.Limits{}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"done", "running", "replayed"} {
		j, _ := sst.GetJob(ctx, schedule.ConfigID(name))
		if ok, err := sst.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: j.Next, Next: j.Next.Add(time.Hour), Slot: j.Next, By: "r1", At: now}); !ok || err != nil {
			t.Fatalf("claim %s = %v, %v", name, ok, err)
		}
		if err := sst.MarkSubmitted(ctx, j.ID, j.Next, now); err != nil {
			t.Fatal(err)
		}
		status, why := echogate.TurnDoneSt, ""
		switch name {
		case "running":
			status = echogate.TurnRunning
		case "replayed":
			// Closed by recovery at the start (the event is answered again by a new turn,
			// whose end records the run): not the run's end.
			status, why = echogate.TurnFailed, "interrupted: the gateway stopped during the turn; the event was replayed"
		}
		rec := echogate.TurnRecord{ID: "t_" + name, Session: schedule.SessionKey(j, j.Next), EventKey: "web:" + schedule.EventKey(j.ID, j.Next),
			UserID: "web:schedule:" + name, Status: status, Error: why, StartedAt: now, EndedAt: now}
		if err := st.CreateTurn(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordPosting(ctx, rec.ID, echogate.MessageRef{Platform: "web", Channel: "ops", ID: "m1"}); err != nil {
			t.Fatal(err)
		}
	}
	s.reconcile(ctx)
	for name, want := range map[string]schedule.Outcome{"done": schedule.OutcomeDelivered, "running": "", "replayed": ""} {
		runs, err := sst.ListRuns(ctx, schedule.ConfigID(name), 1)
		if err != nil || len(runs) != 1 || runs[0].Outcome != want {
			t.Errorf("run of %s after reconcile = %+v, %v; want outcome %q", name, runs, err, want)
		}
	}
}
