package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
)

// schedYAML: jobs of the config delivered through the Slack and Discord fakes. The scripted
// model echoes the prompt ("You said: …"), so quiet_if matches the echo of "NOTHING".
const schedYAML = `
models:
  prices: {gpt-4o-mini: {input_per_mtok: 1000000, output_per_mtok: 1000000}}
tools: {run_command: {allowed: ["true"]}}
schedules:
  - {name: digest, cron: "0 9 * * *", prompt: "daily digest [s-digest]", deliver: "slack:C0SCHED1"}
  - {name: thread, cron: "0 9 * * *", prompt: "thread digest [s-thread]", deliver: "slack:C0SCHED2/1600000000.000100"}
  - {name: quiet, cron: "0 9 * * *", prompt: "NOTHING", quiet_if: "You said: NOTHING", deliver: "slack:C0SCHED3"}
  - {name: gated, cron: "0 9 * * *", prompt: "gated [s-gated]", deliver: "slack:C0SCHED4", precheck: {command: [/bin/false]}}
  - {name: open, cron: "0 9 * * *", prompt: "open [s-open]", deliver: "slack:C0SCHED6", precheck: {command: ["true"]}}
  - {name: broke, cron: "0 9 * * *", prompt: "broke [s-broke]", deliver: "slack:C0SCHED5", budget_usd: 0.01, max_failures: 1}
  - {name: dc, cron: "0 9 * * *", prompt: "discord digest [s-dc]", deliver: "discord:600000000000009999"}
  - {name: runbook, cron: "0 9 * * *", prompt: "check the pager [s-skill]", deliver: "slack:C0SCHED7", skill: incident-runbook}
  - {name: noskill, cron: "0 9 * * *", prompt: "no such skill [s-noskill]", deliver: "slack:C0SCHED8", skill: no-such-skill}
  - {name: sdm, cron: "0 9 * * *", prompt: "slack dm digest [s-sdm]", deliver: "slack:dm:U0DMUSER"}
  - {name: ddm, cron: "0 9 * * *", prompt: "discord dm digest [s-ddm]", deliver: "discord:dm:500000000000000777"}
  - {name: botdm, cron: "0 9 * * *", prompt: "the bot's own dm [s-botdm]", deliver: "discord:dm:100000000000000001", max_failures: 0}
`

// TestE2EScheduledWork is `echogate serve` with jobs in `schedules:` on a test clock: at 9:00
// each runs once through the real adapters. A config job delivers to a Slack channel, a Slack
// thread, a Discord channel, a Slack DM and a Discord DM (opened once, then remembered; a DM
// Discord refuses fails the run with Discord's reason); quiet_if posts nothing; a failing precheck makes no model
// request; a per-run budget stops a run, which (max_failures: 1) pauses the job with one alert,
// and the next day it does not run nor alert again.
func TestE2EScheduledWork(t *testing.T) { scheduledWork(t, nil) }

// TestE2EScheduledWorkPostgres is TestE2EScheduledWork on PostgreSQL (the store replicas share).
func TestE2EScheduledWorkPostgres(t *testing.T) {
	scheduledWork(t, map[string]string{"DATABASE_URL": testPostgres(t)})
}

func scheduledWork(t *testing.T, extra map[string]string) {
	model := newScriptedModel(t)
	sp, ssrv := newSlackPlatform(t)
	dp, dsrv := newDiscordPlatform(t)
	vars := model.vars()
	for k, v := range extra {
		vars[k] = v
	}
	for k, v := range sp.vars {
		vars[k] = v
	}
	for k, v := range dp.vars {
		vars[k] = v
	}
	clock := scheduletest.NewClock(time.Date(2030, 1, 7, 8, 59, 30, 0, time.UTC))
	cfg := writeConfig(t, schedYAML)
	installSkills(t, filepath.Dir(cfg)) // the runbook job's skill; no-such-skill is not installed
	g := startGatewayCtx(t, withScheduleClock(context.Background(), clock), vars, cfg)
	tick := func(to time.Time) {
		t.Helper()
		select {
		case <-clock.Added(): // the worker sleeps until its next slot
		case <-time.After(waitTimeout):
			t.Fatal("the scheduler never went to sleep")
		}
		clock.Set(to)
	}
	tick(time.Date(2030, 1, 7, 9, 0, 5, 0, time.UTC))

	waitMetrics(t, g.base,
		`echogate_schedule_runs_total{job="digest",outcome="delivered"} 1`,
		`echogate_schedule_runs_total{job="thread",outcome="delivered"} 1`,
		`echogate_schedule_runs_total{job="dc",outcome="delivered"} 1`,
		`echogate_schedule_runs_total{job="open",outcome="delivered"} 1`,
		`echogate_schedule_runs_total{job="quiet",outcome="quiet"} 1`,
		`echogate_schedule_runs_total{job="gated",outcome="skipped"} 1`,
		`echogate_schedule_runs_total{job="broke",outcome="budget"} 1`,
		`echogate_schedule_runs_total{job="runbook",outcome="delivered"} 1`,
		`echogate_schedule_runs_total{job="noskill",outcome="failed"} 1`,
		`echogate_schedule_runs_total{job="sdm",outcome="delivered"} 1`,
		`echogate_schedule_runs_total{job="ddm",outcome="delivered"} 1`,
		`echogate_schedule_runs_total{job="botdm",outcome="failed"} 1`,
		"echogate_schedule_lag_seconds_count")

	one := func(what string, msgs []string, want string) {
		t.Helper()
		if len(msgs) != 1 || !strings.Contains(msgs[0], want) {
			t.Errorf("%s: bot messages %q, want exactly one containing %q", what, msgs, want)
		}
	}
	slackTexts := func(ch, thread string) (out []string) {
		for _, m := range ssrv.BotMessages(ch) {
			if m.ThreadTS == thread {
				out = append(out, m.Text)
			} else {
				out = append(out, fmt.Sprintf("(thread %q) %s", m.ThreadTS, m.Text))
			}
		}
		return out
	}
	one("slack channel", slackTexts("C0SCHED1", ""), "daily digest [s-digest]")
	one("slack thread", slackTexts("C0SCHED2", "1600000000.000100"), "thread digest [s-thread]")
	var dc []string
	for _, m := range dsrv.BotMessages("600000000000009999") {
		dc = append(dc, m.Content)
	}
	one("discord channel", dc, "discord digest [s-dc]")
	one("slack DM", slackTexts(slacktest.DMChannel("U0DMUSER"), ""), "slack dm digest [s-sdm]")
	var ddm []string
	for _, m := range dsrv.BotMessages(dsrv.DMChannel("500000000000000777")) {
		ddm = append(ddm, m.Content)
	}
	one("discord DM", ddm, "discord dm digest [s-ddm]")
	var jobs []map[string]any
	getJSON(t, g.base+"/api/schedules", &jobs)
	if b := fmt.Sprint(jobs); !strings.Contains(b, "Cannot send messages to this user") {
		t.Errorf("GET /api/schedules = %s; want the botdm run failed with Discord's reason", b)
	}
	one("precheck exit 0", slackTexts("C0SCHED6", ""), "open [s-open]")
	if got := slackTexts("C0SCHED3", ""); len(got) != 0 {
		t.Errorf("quiet_if: posted %q, want nothing", got)
	}
	if got := slackTexts("C0SCHED4", ""); len(got) != 0 {
		t.Errorf("failing precheck: posted %q, want nothing", got)
	}
	one("budget alert", slackTexts("C0SCHED5", ""), "paused itself")
	followed := false
	for _, req := range model.fake.ChatRequests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "[s-gated]") || strings.Contains(m.Content, "[s-broke]") || strings.Contains(m.Content, "[s-noskill]") {
				t.Errorf("the model was asked %q: a failing precheck, a spent per-run budget or a missing skill must make no model request", oneLine(m.Content, 80))
			}
			if strings.Contains(m.Content, "[s-skill]") && strings.Contains(m.Content, `Follow the "incident-runbook" skill`) {
				followed = true
			}
		}
	}
	if !followed {
		t.Error(`the runbook job's request does not ask the model to follow the "incident-runbook" skill`)
	}

	// The next day: the paused job neither runs nor alerts again; the others run once more.
	tick(time.Date(2030, 1, 8, 9, 0, 5, 0, time.UTC))
	waitMetrics(t, g.base, `echogate_schedule_runs_total{job="digest",outcome="delivered"} 2`, `echogate_schedule_runs_total{job="gated",outcome="skipped"} 2`,
		`echogate_schedule_runs_total{job="sdm",outcome="delivered"} 2`, `echogate_schedule_runs_total{job="ddm",outcome="delivered"} 2`)
	if n, m := len(ssrv.CallsTo("conversations.open")), len(dsrv.CallsTo("POST", "/users/@me/channels")); n != 1 || m != 3 {
		t.Errorf("conversations.open calls = %d, Discord create DM calls = %d; want 1 and 3 (each DM opened once; the refused one asked again on each run)", n, m)
	}
	one("budget alert after a day", slackTexts("C0SCHED5", ""), "paused itself")
	if strings.Contains(metricsText(t, g.base), `echogate_schedule_runs_total{job="broke",outcome="budget"} 2`) {
		t.Error("the paused job ran again")
	}

	// A reminder asked for in a Slack thread arrives in that thread, 10 minutes later.
	c := sp.newConv(t, "[r-1]")
	sp.open(t, c, sp.requester, "remind me in 10 minutes to renew the cert [r-1]")
	c.waitMsg(t, afterToolText, "Scheduled job")
	pump := pumpClock(clock)
	clock.Advance(11 * time.Minute)
	c.waitMsg(t, echoText+"renew the cert [r-1]")
	pump()
	if n := len(sp.bot(c)); n != 2 {
		t.Errorf("bot messages in the thread = %d, want the confirmation and the reminder:\n%s", n, c.transcript())
	}
	waitMetrics(t, g.base, `echogate_schedule_runs_total{job="chat",outcome="delivered"} 1`)
}

// pumpClock moves clock on by a second each time the scheduler goes to sleep, until the
// returned stop is called: a slot that came due while the worker was mid-pass (and so sleeps
// its minimum second) runs without the test sleeping.
func pumpClock(clock *scheduletest.Clock) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-clock.Added():
				clock.Advance(time.Second)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-exited }) }
}

// metricsText is the gateway's /metrics page.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestE2EScheduleAPI: GET /api/schedules lists the jobs (next run, last outcome, owner, agent);
// POST …/run runs one now, once; pause and resume change its state; an unknown job is 404.
func TestE2EScheduleAPI(t *testing.T) {
	model := newScriptedModel(t)
	sp, ssrv := newSlackPlatform(t)
	vars := model.vars()
	for k, v := range sp.vars {
		vars[k] = v
	}
	vars["ECHOGATE_HTTP_AUTH_TOKEN"] = "api-token"
	clock := scheduletest.NewClock(time.Date(2030, 1, 7, 8, 0, 0, 0, time.UTC))
	g := startGatewayCtx(t, withScheduleClock(context.Background(), clock), vars, writeConfig(t, `
schedules:
  - {name: digest, cron: "0 9 * * *", prompt: "api digest [s-api]", deliver: "slack:C0SCHEDA"}
`))
	call := func(method, path string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, g.base+path, nil)
		req.Header.Set("Authorization", "Bearer api-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		return b
	}
	// The config's jobs are stored once the pipeline runs.
	for deadline := time.Now().Add(waitTimeout); !strings.Contains(string(call("GET", "/api/schedules", 200)), "config:digest"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the config job was never stored")
		}
	}
	if b := call("GET", "/api/schedules", 200); !containsAll(string(b), `"id":"config:digest"`, `"owner":"config"`, `"next_run":"2030-01-07T09:00:00Z"`, `"state":"enabled"`) {
		t.Errorf("GET /api/schedules = %s, want the digest with its next run", b)
	}
	call("POST", "/api/schedules/digest/run", 202)
	slackWait(t, ssrv, "the run's answer", func() bool { return len(ssrv.BotMessages("C0SCHEDA")) > 0 })
	for deadline := time.Now().Add(waitTimeout); !strings.Contains(string(call("GET", "/api/schedules", 200)), `"last_outcome":"delivered"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run now was never recorded delivered")
		}
	}
	if n := len(ssrv.BotMessages("C0SCHEDA")); n != 1 {
		t.Errorf("messages after run = %d, want 1", n)
	}
	if b := call("POST", "/api/schedules/config:digest/pause", 200); !strings.Contains(string(b), `"state":"paused"`) {
		t.Errorf("pause = %s, want paused", b)
	}
	call("POST", "/api/schedules/digest/run", 409) // a paused job is not run
	if b := call("POST", "/api/schedules/digest/resume", 200); !containsAll(string(b), `"state":"enabled"`, `"last_outcome":"delivered"`) {
		t.Errorf("resume = %s, want enabled with its last outcome", b)
	}
	call("POST", "/api/schedules/nope/pause", 404)
	req, _ := http.NewRequest("GET", g.base+"/api/schedules", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/schedules without the token = %v %v, want 401", resp.StatusCode, err)
	}
}

// TestE2EScheduleHotReload: an edited `schedules:` is applied without a restart: a new job is
// stored with its first slot, a removed one is gone.
func TestE2EScheduleHotReload(t *testing.T) {
	model := newScriptedModel(t)
	clock := scheduletest.NewClock(time.Date(2030, 1, 7, 8, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "echogate.yaml")
	write := func(yaml string) {
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("schedules:\n  - {name: old, every: 1h, prompt: p, deliver: 'web:ops'}\n")
	g := startGatewayCtx(t, withScheduleClock(context.Background(), clock), model.vars(), path)
	list := func() string {
		resp, err := http.Get(g.base + "/api/schedules")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for deadline := time.Now().Add(waitTimeout); !strings.Contains(list(), `"config:old"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the config job was never stored")
		}
	}
	write("schedules:\n  - {name: fresh-digest, cron: '30 9 * * *', prompt: p, deliver: 'web:ops'}\n")
	g.logs.waitLine(t, "configuration reloaded", `trigger="file changed"`)
	if got := list(); strings.Contains(got, `"config:old"`) || !containsAll(got, `"config:fresh-digest"`, `"next_run":"2030-01-07T09:30:00Z"`) {
		t.Errorf("after the reload: /api/schedules = %s, want only fresh-digest, next at 09:30", got)
	}
}

// TestE2EUnattendedSensitiveCall: a scheduled run's sensitive tool call (run_command) is
// refused under approval.unattended: deny (the default) and the run's outcome is denied; under
// prompt the approval prompt is posted to the delivery place, an approver's ✅ runs it, and
// the answer follows there.
func TestE2EUnattendedSensitiveCall(t *testing.T) {
	for _, mode := range []string{"deny", "prompt"} {
		t.Run(mode, func(t *testing.T) {
			model := newScriptedModel(t)
			sp, ssrv := newSlackPlatform(t)
			vars := model.vars()
			for k, v := range sp.vars {
				vars[k] = v
			}
			clock := scheduletest.NewClock(time.Date(2030, 1, 7, 8, 59, 30, 0, time.UTC))
			g := startGatewayCtx(t, withScheduleClock(context.Background(), clock), vars, writeConfig(t, `
approval: {unattended: `+mode+`, approvers: ['slack:`+sp.stranger+`']}
tools: {run_command: {allowed: ["true"]}}
schedules:
  - {name: cleanup, cron: "0 9 * * *", prompt: "run the cleanup [s-un]", deliver: "slack:C0UNATT"}
`))
			<-clock.Added()
			clock.Set(time.Date(2030, 1, 7, 9, 0, 5, 0, time.UTC))
			c := &conv{p: sp, ch: "C0UNATT"}
			if mode == "deny" {
				c.waitMsg(t, afterToolText, "approval.unattended: deny")
				waitMetrics(t, g.base, `echogate_schedule_runs_total{job="cleanup",outcome="denied"} 1`)
				if n := len(c.find("Approval needed")); n != 0 {
					t.Errorf("approval prompts = %d, want none under deny", n)
				}
				return
			}
			prompt := c.waitPrompt(t, "run_command")
			// The pause records its prompt's id right after posting it; a person reacts later
			// than that, the test waits for it (the decision is routed by that id).
			for deadline := time.Now().Add(waitTimeout); ; time.Sleep(20 * time.Millisecond) {
				if ps := pendingApprovals(t, g.base); len(ps) == 1 && strings.Contains(fmt.Sprint(ps[0]["prompt"]), prompt.ID) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the pause never recorded its prompt: %v", pendingApprovals(t, g.base))
				}
			}
			sp.react(t, c, prompt.ID, sp.stranger, echogate.ReactionApprove)
			sp.waitFor(t, "the answer after the approved call", func() bool {
				for _, m := range ssrv.BotMessages(c.ch) {
					if strings.Contains(m.Text, afterToolText) {
						return true
					}
				}
				return false
			})
			waitMetrics(t, g.base, `echogate_schedule_runs_total{job="cleanup",outcome="delivered"} 1`)
		})
	}
}

// TestE2EScheduleWebhook: a job delivering to webhook:https://… posts its answer there, signed
// with its secret, and the run is recorded delivered once the webhook answered 2xx.
func TestE2EScheduleWebhook(t *testing.T) {
	model := newScriptedModel(t)
	got := make(chan *http.Request, 4)
	bodies := make(chan string, 4)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- string(b)
	}))
	defer hook.Close()
	clock := scheduletest.NewClock(time.Date(2030, 1, 7, 8, 59, 30, 0, time.UTC))
	ctx := withWebhookTLS(withScheduleClock(context.Background(), clock), hook.Client().Transport.(*http.Transport).TLSClientConfig)
	g := startGatewayCtx(t, ctx, model.vars(), writeConfig(t, `
tools: {http_fetch: {allow_private: true}}
schedules:
  - {name: hooked, cron: "0 9 * * *", prompt: "hook digest [s-hook]", deliver: "webhook:`+hook.URL+`/in", secret: hook-secret}
`))
	<-clock.Added()
	clock.Set(time.Date(2030, 1, 7, 9, 0, 5, 0, time.UTC))
	select {
	case r := <-got:
		body := <-bodies
		mac := hmac.New(sha256.New, []byte("hook-secret"))
		mac.Write([]byte(r.Header.Get("X-Echogate-Timestamp") + "." + body))
		if r.URL.Path != "/in" || r.Header.Get("X-Echogate-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) || !strings.Contains(body, echoText+"hook digest [s-hook]") {
			t.Errorf("webhook got %s %s (signature %q): %s; want the answer signed with the job's secret", r.Method, r.URL.Path, r.Header.Get("X-Echogate-Signature"), body)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the webhook was never called")
	}
	waitMetrics(t, g.base, `echogate_schedule_runs_total{job="hooked",outcome="delivered"} 1`)
}

// TestE2EScheduleReplicas: two gateways on one PostgreSQL and one clock run every slot of
// several jobs once between them: each answer is posted exactly once, and every slot runs.
func TestE2EScheduleReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two gateways")
	}
	dbURL := testPostgres(t)
	model := newScriptedModel(t)
	sp, ssrv := newSlackPlatform(t)
	vars := model.vars()
	for k, v := range sp.vars {
		vars[k] = v
	}
	vars["DATABASE_URL"] = dbURL
	base := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
	clock := scheduletest.NewClock(base.Add(-30 * time.Second))
	cfg := writeConfig(t, `
schedules:
  - {name: r1, every: 1m, prompt: "replica one", deliver: "slack:C0REP1"}
  - {name: r2, every: 1m, prompt: "replica two", deliver: "slack:C0REP2"}
  - {name: r3, every: 1m, prompt: "replica three", deliver: "slack:C0REP3"}
`)
	ctx := withScheduleClock(context.Background(), clock)
	a := startGatewayCtx(t, ctx, vars, cfg)
	b := startGatewayCtx(t, ctx, vars, cfg)
	channels := []string{"C0REP1", "C0REP2", "C0REP3"}
	const minutes = 15
	pump := pumpClock(clock)
	defer pump()
	for k := 1; k <= minutes; k++ {
		clock.Set(base.Add(time.Duration(k-1)*time.Minute + 5*time.Second))
		slackWait(t, ssrv, fmt.Sprintf("minute %d's answers", k), func() bool {
			for _, ch := range channels {
				if len(ssrv.BotMessages(ch)) < k {
					return false
				}
			}
			return true
		})
	}
	pump()
	slots := 0
	for _, ch := range channels {
		if n := len(ssrv.BotMessages(ch)); n != minutes {
			t.Errorf("%s: %d answers, want %d (one per slot)", ch, n, minutes)
		}
		slots += len(ssrv.BotMessages(ch))
	}
	ma, mb := metricsText(t, a.base), metricsText(t, b.base)
	t.Logf("%d slots over 2 replicas; replica A ran: %s; replica B ran: %s", slots, runsLine(ma), runsLine(mb))
}

// runsLine sums echogate_schedule_runs_total lines of a /metrics page by outcome.
func runsLine(page string) string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "echogate_schedule_runs_total{") {
			out = append(out, l[len("echogate_schedule_runs_total"):])
		}
	}
	return strings.Join(out, " ")
}
