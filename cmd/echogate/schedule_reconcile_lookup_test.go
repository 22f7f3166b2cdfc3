package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack"
	"github.com/echogate/echogate/channels/slack/slacktest"
	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
	"github.com/echogate/echogate/pipeline"
)

// A run whose turn ended done with no posting record (killed between the turn's end and the
// outcome, before postings were recorded, or the posting write failed) is recorded from what
// the platform shows: delivered when the turn's answer is in the channel (its id recorded),
// unconfirmed when it is not; a run whose transcript shows the unattended refusal is denied, and
// so is a run the approval timeout refused after its pause (the turn that resumed it ended).
func TestReconcileLooksOnThePlatformForTheAnswer(t *testing.T) {
	ctx := context.Background()
	srv := slacktest.New(slacktest.Options{})
	t.Cleanup(srv.Close)
	ch, err := slack.New(slack.Config{BotToken: srv.BotToken(), SigningSecret: "s", APIURL: srv.APIURL(), RequestTimeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	c := &core{cfg: cfg, store: st, log: slog.New(slog.DiscardHandler), metrics: metrics.New()}
	s := &scheduler{c: c, st: sst, clock: scheduletest.NewClock(now.Add(time.Hour)), repliers: map[string]pipeline.Replier{echogate.PlatformSlack: ch}}
	s.cfg.Store(cfg)
	chans := map[string]string{"posted": "C0REC1", "lost": "C0REC2", "denied": "C0REC3", "resumed": "C0REC4"}
	var jobs []schedule.Job
	for name, c := range chans {
		jobs = append(jobs, schedule.Job{Name: name, Prompt: "p", Deliver: "slack:" + c, Spec: schedule.Spec{Every: time.Hour}})
	}
	if err := schedule.SyncConfigJobs(ctx, sst, jobs, schedule.Limits{}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for name, chID := range chans {
		j, _ := sst.GetJob(ctx, schedule.ConfigID(name))
		if ok, err := sst.ClaimSlot(ctx, schedule.Claim{JobID: j.ID, Cursor: j.Next, Next: j.Next.Add(time.Hour), Slot: j.Next, By: "r1", At: now}); !ok || err != nil {
			t.Fatalf("claim %s = %v, %v", name, ok, err)
		}
		if err := sst.MarkSubmitted(ctx, j.ID, j.Next, now); err != nil {
			t.Fatal(err)
		}
		rec := echogate.TurnRecord{ID: "t_" + name, Session: schedule.SessionKey(j, j.Next), EventKey: "slack:" + schedule.EventKey(j.ID, j.Next),
			UserID: "slack:schedule:" + name, Status: echogate.TurnDoneSt, StartedAt: now, EndedAt: now}
		if name == "resumed" {
			// The slot's turn paused for an approval (approval.unattended: prompt); the timeout's
			// decision resumed it as a turn of its own, which ended.
			paused := rec
			paused.ID, paused.Status = "t_resumed_0", echogate.TurnPaused
			if err := st.CreateTurn(ctx, paused); err != nil {
				t.Fatal(err)
			}
			rec.EventKey, rec.StartedAt, rec.EndedAt = "slack:approval-timeout:t_resumed_0", now.Add(time.Hour), now.Add(time.Hour)
		}
		if err := st.CreateTurn(ctx, rec); err != nil {
			t.Fatal(err)
		}
		conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: chID}
		if err := st.UpsertSession(ctx, echogate.SessionInfo{Key: rec.Session, Conversation: conv, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if name == "resumed" {
			if err := st.AppendMessages(ctx, rec.Session, rec.ID, []echogate.Message{{Role: echogate.RoleTool, ToolCallID: "c1", Name: "run_command", Content: "not approved: nobody approved within 1h", IsError: true},
				{Role: echogate.RoleAssistant, Content: "Nobody approved it."}}, now); err != nil {
				t.Fatal(err)
			}
		}
		if name == "denied" {
			deny := pipeline.UnattendedDenialText("run_command")
			if err := st.AppendMessages(ctx, rec.Session, rec.ID, []echogate.Message{{Role: echogate.RoleTool, ToolCallID: "c1", Name: "run_command", Content: deny, IsError: true},
				{Role: echogate.RoleAssistant, Content: "I could not run it."}}, now); err != nil {
				t.Fatal(err)
			}
		}
		if name != "lost" {
			if _, err := ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Turn: rec.ID, Text: "the answer of " + name}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.reconcile(ctx)
	for name, want := range map[string]schedule.Outcome{"posted": schedule.OutcomeDelivered, "lost": schedule.OutcomeUnconfirmed, "denied": schedule.OutcomeDenied,
		"resumed": schedule.OutcomeDenied} {
		runs, err := sst.ListRuns(ctx, schedule.ConfigID(name), 1)
		if err != nil || len(runs) != 1 || runs[0].Outcome != want {
			t.Errorf("run of %s after reconcile = %+v, %v; want outcome %q", name, runs, err, want)
		}
	}
	if runs, _ := sst.ListRuns(ctx, schedule.ConfigID("resumed"), 1); len(runs) != 1 || runs[0].TurnID != "t_resumed" || runs[0].Error != "not approved: nobody approved within 1h" {
		t.Errorf("run of resumed = %+v, want the resumed turn's end with the decision's reason", runs)
	}
	if got, _ := st.GetPosting(ctx, "t_posted"); got.Channel != "C0REC1" || got.ID == "" {
		t.Errorf("GetPosting(t_posted) after reconcile = %+v, want the message found in C0REC1", got)
	}
}
