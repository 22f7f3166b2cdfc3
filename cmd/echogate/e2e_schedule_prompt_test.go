package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
)

// startPromptJob starts serve with approval.unattended: prompt (approval holds the rest of the
// approval: keys) and one job at 9:00 delivering to slack:ch, and runs its slot.
func startPromptJob(t *testing.T, approval, job, ch string) (*platform, *e2eGateway, *conv) {
	t.Helper()
	model := newScriptedModel(t)
	sp, _ := newSlackPlatform(t)
	vars := model.vars()
	for k, v := range sp.vars {
		vars[k] = v
	}
	clock := scheduletest.NewClock(time.Date(2030, 1, 7, 8, 59, 30, 0, time.UTC))
	g := startGatewayCtx(t, withScheduleClock(context.Background(), clock), vars, writeConfig(t, `
approval: {unattended: prompt, approvers: ['slack:`+sp.stranger+`']`+approval+`}
tools: {run_command: {allowed: ["true"]}}
schedules:
  - {name: cleanup, cron: "0 9 * * *", deliver: "slack:`+ch+`", `+job+`}
`))
	<-clock.Added()
	clock.Set(time.Date(2030, 1, 7, 9, 0, 5, 0, time.UTC))
	return sp, g, &conv{p: sp, ch: ch}
}

// TestE2EPromptModeQuietIfAppliesAfterTheApproval: a scheduled run paused for an approval
// (approval.unattended: prompt) is the same run when the approver's ✅ resumes it: an answer
// equal to its job's quiet_if is recorded, not posted, and the run is quiet.
func TestE2EPromptModeQuietIfAppliesAfterTheApproval(t *testing.T) {
	sp, g, c := startPromptJob(t, "", `prompt: "run the cleanup [quiet-after-tool]", quiet_if: NOTHING`, "C0PQUIET")
	prompt := c.waitPrompt(t, "run_command")
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(20 * time.Millisecond) {
		if ps := pendingApprovals(t, g.base); len(ps) == 1 && strings.Contains(fmt.Sprint(ps[0]["prompt"]), prompt.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pause never recorded its prompt: %v", pendingApprovals(t, g.base))
		}
	}
	sp.react(t, c, prompt.ID, sp.stranger, echogate.ReactionApprove)
	waitMetrics(t, g.base, `echogate_schedule_runs_total{job="cleanup",outcome="quiet"} 1`)
	if got := c.find("NOTHING"); len(got) != 0 {
		t.Errorf("posted %q after the approval, want the quiet answer recorded, not posted", got[0].Text)
	}
}

// TestE2EPromptModeRunEndsAtTheApprovalTimeout: under on_timeout: wait a person's pause waits,
// but a scheduled run's does not wait forever: after approval.timeout the call is refused, the
// model answers without it, and the run is recorded denied with the reason.
func TestE2EPromptModeRunEndsAtTheApprovalTimeout(t *testing.T) {
	sp, g, c := startPromptJob(t, ", on_timeout: wait, timeout: 1s, check_interval: 100ms", `prompt: "run the cleanup [s-wait]"`, "C0PWAIT")
	c.waitPrompt(t, "run_command")
	chat := sp.newConv(t, "[c-wait]")
	sp.open(t, chat, sp.requester, "run the cleanup [c-wait]") // a person's pause, under wait
	chat.waitPrompt(t, "run_command")
	waitMetrics(t, g.base, `echogate_schedule_runs_total{job="cleanup",outcome="denied"} 1`)
	var jobs []map[string]any
	getJSON(t, g.base+"/api/schedules", &jobs)
	if b := fmt.Sprint(jobs); !strings.Contains(b, "nobody approved within 1s") {
		t.Errorf("GET /api/schedules = %s, want the run denied because nobody approved within 1s", b)
	}
	c.waitMsg(t, "Nobody approved")
	// The person's pause still waits (on_timeout: wait): 1s and more after it was asked.
	if ps := pendingApprovals(t, g.base); len(ps) != 1 || !strings.Contains(fmt.Sprint(ps[0]), chat.ch) {
		t.Errorf("pending approvals after the run's timeout = %v, want the person's pause in %s only", ps, chat.ch)
	}
}
