package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
)

func TestListTextAndViews(t *testing.T) {
	next := time.Date(2026, 12, 8, 8, 0, 0, 0, time.UTC)
	jobs := []schedule.Job{
		{ID: "config:ops-digest", Name: "ops-digest", Spec: schedule.Spec{Cron: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"}, Prompt: "Summarize #ops", Next: next, LastOutcome: schedule.OutcomeDelivered},
		{ID: "r1", Spec: schedule.Spec{At: next}, Prompt: "renew the cert"},
		{ID: "c1", Spec: schedule.Spec{Every: 30 * time.Minute}, Prompt: "check", Next: next, Paused: true, LastOutcome: schedule.OutcomeFailed, Failures: 3},
	}
	want := "• ops-digest — cron 0 9 * * MON-FRI (Europe/Berlin) — enabled, next 2026-12-08 08:00 UTC, last delivered: Summarize #ops\n" +
		"• r1 — at 2026-12-08T08:00:00Z — done: renew the cert\n" +
		"• c1 — every 30m0s — paused, last failed: check"
	if got := schedule.ListText(jobs); got != want {
		t.Errorf("ListText =\n%s\nwant\n%s", got, want)
	}
	if got := schedule.ListText(nil); got != "No scheduled jobs." {
		t.Errorf("ListText(nil) = %q", got)
	}
	held := jobs[0]
	held.NotBefore = next.Add(time.Hour)
	if v := schedule.ViewOf(held); !v.NextRun.Equal(held.NotBefore) {
		t.Errorf("ViewOf(backed off).NextRun = %v, want the back-off's end %v", v.NextRun, held.NotBefore)
	}
}

func TestCancelOnlyOwnJobs(t *testing.T) {
	ctx := context.Background()
	st := scheduletest.NewMemStore(nil)
	mine := newJob(t, st, "mine", schedule.Spec{Every: time.Hour}, 0)
	cfg := mine
	cfg.ID, cfg.Owner = schedule.ConfigID("digest"), schedule.ConfigOwner
	if err := st.PutConfigJob(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ id, owner string }{{"mine", "slack:T1:U2"}, {cfg.ID, schedule.ConfigOwner}, {"nope", mine.Owner}, {"mine", ""}} {
		if err := schedule.Cancel(ctx, st, tt.id, tt.owner); !errors.Is(err, echogate.ErrNotFound) || !strings.Contains(err.Error(), "you have no job") {
			t.Errorf("Cancel(%s by %q) = %v, want not found", tt.id, tt.owner, err)
		}
	}
	if err := schedule.Cancel(ctx, st, "mine", mine.Owner); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetJob(ctx, "mine"); !errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("the cancelled job is still there: %v", err)
	}
}
