package main

import (
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// Every mistake in `scheduler:`, `schedules:` and approval.unattended is an error naming the key
// and the fix (SPEC "Scheduled work").
func TestScheduleConfigErrorsNameTheKey(t *testing.T) {
	for name, tt := range map[string]struct{ yaml, want string }{
		"no name":            {"schedules: [{every: 1h, prompt: p, deliver: 'slack:C1'}]", "schedules[0].name"},
		"bad name":           {"schedules: [{name: Ops_Digest, every: 1h, prompt: p, deliver: 'slack:C1'}]", `schedules.Ops_Digest.name: use lower-case letters, digits and -`},
		"duplicate":          {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1'}, {name: a, every: 2h, prompt: p, deliver: 'slack:C1'}]", `schedules.a.name: "a" is used twice`},
		"no timing":          {"schedules: [{name: a, prompt: p, deliver: 'slack:C1'}]", "schedules.a: invalid schedule: set exactly one of cron, every and at"},
		"bad cron":           {"schedules: [{name: a, cron: '61 * * * *', prompt: p, deliver: 'slack:C1'}]", `schedules.a: invalid schedule: cron "61 * * * *"`},
		"bad zone":           {"schedules: [{name: a, cron: '0 9 * * *', timezone: Mars/Base, prompt: p, deliver: 'slack:C1'}]", `timezone "Mars/Base": not an IANA zone`},
		"too often":          {"schedules: [{name: a, every: 10s, prompt: p, deliver: 'slack:C1'}]", "below scheduler.min_interval 1m0s"},
		"bad at":             {"schedules: [{name: a, at: tomorrow, prompt: p, deliver: 'slack:C1'}]", `schedules.a.at: "tomorrow" is not an RFC 3339 time`},
		"no prompt":          {"schedules: [{name: a, every: 1h, deliver: 'slack:C1'}]", "prompt is empty"},
		"bad deliver":        {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'C1'}]", `deliver "C1"`},
		"dm by name":         {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:dm:ann'}]", "a Slack DM needs the user's member id (U…"},
		"discord dm by name": {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'discord:dm:ann'}]", "a Discord DM needs the user's numeric id"},
		"webhook":            {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'webhook:https://h.example/x'}]", "schedules.a.secret: a webhook target needs a secret"},
		"http webhook":       {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'webhook:http://h.example/x', secret: s}]", "a webhook must be an https URL"},
		"unknown agent":      {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', agent: nope}]", `schedules.a.agent: "nope" is not in agents:`},
		"bad catch_up":       {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', catch_up: always}]", `catch_up "always": use once or skip`},
		"negative budget":    {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', budget_usd: -1}]", "budget_usd -1: must be >= 0"},
		"two prechecks":      {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', precheck: {command: [/bin/true], http: 'https://x.example'}}]", "schedules.a.precheck: set command or http, not both"},
		"relative precheck":  {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', precheck: {command: [true]}}]", `schedules.a.precheck.command: "true" is neither an absolute path nor in tools.run_command.allowed`},
		"http precheck":      {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', precheck: {http: 'http://x.example'}}]", "schedules.a.precheck.http: \"http://x.example\": use an https:// URL"},
		"bad skill":          {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', skill: Incident_Runbook}]", `schedules.a.skill: "Incident_Runbook" is not a skill name`},
		"bad session":        {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', session: forever}]", `session "forever": use isolated or shared`},
		"unknown key":        {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1', channel: C1}]", `unknown key "channel"`},
		"min interval":       {"scheduler: {min_interval: -1s}", "min_interval"},
		"max per user":       {"scheduler: {max_per_user: -1}", "scheduler.max_per_user: -1"},
		"stale after":        {"scheduler: {stale_after: 10ms}", "scheduler.stale_after: 10ms"},
		"unattended":         {"approval: {unattended: ask}", `approval.unattended: "ask": use deny`},
	} {
		_, err := loadYAML(t, tt.yaml)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: loadConfig = %v, want an error containing %q", name, err, tt.want)
		}
	}
}

// A valid `schedules:` becomes the jobs SyncConfigJobs stores, with the defaults of SPEC.
func TestScheduleConfigBecomesJobs(t *testing.T) {
	cfg, err := loadYAML(t, `
scheduler: {min_interval: 30s, max_per_user: 5}
tools: {run_command: {allowed: [has-incidents]}}
agents: [{name: oncall, match: ['slack:C9']}]
schedules:
  - name: ops-digest
    cron: "0 9 * * MON-FRI"
    timezone: Europe/Berlin
    prompt: "Summarize #ops."
    deliver: slack:C0123/1700000000.000100
    agent: oncall
    precheck: {command: [has-incidents, --since, 1d]}
    quiet_if: NOTHING
    budget_usd: 0.2
    catch_up: skip
    max_lateness: 2h
  - name: check
    every: 30s
    prompt: "Check."
    deliver: discord:42
    max_failures: 0
  - name: off
    every: 1h
    prompt: p
    deliver: slack:C1
    enabled: false
`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Approval.Unattended != "deny" {
		t.Errorf("approval.unattended = %q, want deny (the default)", cfg.Approval.Unattended)
	}
	lim := cfg.Scheduler.limits()
	if lim.MinInterval != 30*time.Second || lim.MaxPerUser != 5 {
		t.Errorf("limits = %+v, want 30s and 5", lim)
	}
	jobs := cfg.scheduleJobs()
	if len(jobs) != 2 {
		t.Fatalf("scheduleJobs = %d jobs, want 2 (the disabled one left out)", len(jobs))
	}
	d := jobs[0]
	want := schedule.Job{Name: "ops-digest", Deliver: "slack:C0123/1700000000.000100", Agent: "oncall", Prompt: "Summarize #ops.",
		Spec: schedule.Spec{Cron: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"}, QuietIf: "NOTHING", BudgetUSD: 0.2,
		CatchUp: schedule.CatchUp{Policy: "skip", MaxLateness: 2 * time.Hour}, MaxFailures: 3}
	if d.Name != want.Name || d.Deliver != want.Deliver || d.Agent != want.Agent || d.Spec != want.Spec || d.QuietIf != want.QuietIf ||
		d.BudgetUSD != want.BudgetUSD || d.CatchUp != want.CatchUp || d.MaxFailures != want.MaxFailures || d.Prompt != want.Prompt {
		t.Errorf("scheduleJobs()[0] = %+v, want %+v", d, want)
	}
	if jobs[1].MaxFailures != 0 || jobs[1].Spec.Every != 30*time.Second {
		t.Errorf("scheduleJobs()[1] = %+v, want max_failures 0 kept (never pause), every 30s", jobs[1])
	}
	if pc := cfg.schedulePrecheck("ops-digest"); len(pc.Command) != 3 {
		t.Errorf("schedulePrecheck(ops-digest) = %+v, want its command", pc)
	}
}
