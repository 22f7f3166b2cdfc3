package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// SchedulerConf is the `scheduler:` section (SPEC "Scheduled work"): the bounds on jobs.
type SchedulerConf struct {
	// MinInterval is the shortest `every` / cron period accepted (default 1m).
	MinInterval Duration `yaml:"min_interval"`
	// MaxPerUser is how many jobs one user may own through the `schedule` tool (default 20).
	MaxPerUser int `yaml:"max_per_user"`
	// StaleAfter: a slot claimed and not handed to the pipeline for that long (its process
	// died between the claim and the submit) is taken over by a live worker (default 2m).
	StaleAfter Duration `yaml:"stale_after"`
}

func (s SchedulerConf) limits() schedule.Limits {
	return schedule.Limits{MinInterval: time.Duration(s.MinInterval), MaxPerUser: s.MaxPerUser}
}

// ScheduleConf is one entry of `schedules:`: a job of the operator's, owned by the config.
type ScheduleConf struct {
	Name     string   `yaml:"name"` // unique; [a-z0-9-]
	Cron     string   `yaml:"cron"`
	Timezone string   `yaml:"timezone"`
	Every    Duration `yaml:"every"`
	At       string   `yaml:"at"` // RFC 3339
	Prompt   string   `yaml:"prompt"`
	Deliver  string   `yaml:"deliver"`
	// Secret signs a webhook target's deliveries (HMAC-SHA256); required for webhook:https://….
	Secret   string       `yaml:"secret"`
	Agent    string       `yaml:"agent"`
	Session  string       `yaml:"session"` // isolated | shared
	Precheck PrecheckConf `yaml:"precheck"`
	// Skill names an installed skill the run follows: the prompt asks the model to load it first.
	Skill       string   `yaml:"skill"`
	QuietIf     string   `yaml:"quiet_if"`
	BudgetUSD   float64  `yaml:"budget_usd"`
	CatchUp     string   `yaml:"catch_up"` // once | skip
	MaxLateness Duration `yaml:"max_lateness"`
	// MaxFailures: consecutive failures after which the job pauses itself (default 3, 0 never).
	MaxFailures *int  `yaml:"max_failures"`
	Enabled     *bool `yaml:"enabled"` // default true
}

// PrecheckConf runs before the model: a command (no shell; its first word an absolute path or
// a command of tools.run_command.allowed) or an HTTPS probe. Non-zero / non-2xx skips the run.
type PrecheckConf struct {
	Command []string `yaml:"command"`
	HTTP    string   `yaml:"http"`
}

// IsZero reports whether no precheck is set.
func (p PrecheckConf) IsZero() bool { return len(p.Command) == 0 && p.HTTP == "" }

// defaultMaxFailures is a job's max_failures when the config leaves it out.
const defaultMaxFailures = 3

var scheduleName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// job is e as a schedule.Job (its ID and owner are set by SyncConfigJobs); at is already
// validated.
func (e ScheduleConf) job() schedule.Job {
	j := schedule.Job{Name: e.Name, Deliver: strings.TrimSpace(e.Deliver), Agent: e.Agent, Prompt: strings.TrimSpace(e.Prompt),
		Spec:    schedule.Spec{Cron: strings.TrimSpace(e.Cron), Timezone: e.Timezone, Every: time.Duration(e.Every)},
		Session: e.Session, QuietIf: strings.TrimSpace(e.QuietIf), BudgetUSD: e.BudgetUSD,
		CatchUp:     schedule.CatchUp{Policy: e.CatchUp, MaxLateness: time.Duration(e.MaxLateness)},
		MaxFailures: defaultMaxFailures}
	if e.At != "" {
		j.Spec.At, _ = time.Parse(time.RFC3339, e.At)
	}
	if e.MaxFailures != nil {
		j.MaxFailures = *e.MaxFailures
	}
	return j
}

// scheduleJobs are the enabled jobs of `schedules:`, for SyncConfigJobs.
func (c *Config) scheduleJobs() []schedule.Job {
	var out []schedule.Job
	for _, e := range c.Schedules {
		if e.Enabled == nil || *e.Enabled {
			out = append(out, e.job())
		}
	}
	return out
}

// scheduleSecret is the webhook secret of the config job name ("" when none).
func (c *Config) scheduleSecret(name string) string {
	for _, e := range c.Schedules {
		if e.Name == name {
			return e.Secret
		}
	}
	return ""
}

// scheduleSkill is the skill the config job name follows ("" when none, or not a config job).
func (c *Config) scheduleSkill(name string) string {
	for _, e := range c.Schedules {
		if e.Name == name {
			return e.Skill
		}
	}
	return ""
}

// skillName is what an Agent Skills name may be (tools/skills validates the installed ones).
var skillName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// schedulePrecheck is the precheck of the config job name (zero when none, or not a config job).
func (c *Config) schedulePrecheck(name string) PrecheckConf {
	for _, e := range c.Schedules {
		if e.Name == name {
			return e.Precheck
		}
	}
	return PrecheckConf{}
}

// validateSchedules checks `scheduler:`, `schedules:` and approval.unattended. Each job goes
// through schedule.CheckJob, so the config refuses what the scheduler would.
func (c *Config) validateSchedules() error {
	switch c.Approval.Unattended {
	case "deny", "prompt":
	default:
		return badKey("approval.unattended", "%q: use deny (a sensitive tool call in a scheduled run is refused) or prompt (the approval prompt is posted to the job's delivery place)", c.Approval.Unattended)
	}
	if c.Scheduler.MinInterval < 0 || (c.Scheduler.MinInterval > 0 && time.Duration(c.Scheduler.MinInterval) < time.Second) {
		return badKey("scheduler.min_interval", "%s: give the shortest period a job may have, at least 1s (default 1m)", time.Duration(c.Scheduler.MinInterval))
	}
	if c.Scheduler.StaleAfter < 0 || (c.Scheduler.StaleAfter > 0 && time.Duration(c.Scheduler.StaleAfter) < time.Second) {
		return badKey("scheduler.stale_after", "%s: give how long a claimed, unsubmitted slot waits before a live worker takes it over, at least 1s (default 2m)", time.Duration(c.Scheduler.StaleAfter))
	}
	if c.Scheduler.MaxPerUser < 0 {
		return badKey("scheduler.max_per_user", "%d: give how many jobs one user may own through the schedule tool (default 20)", c.Scheduler.MaxPerUser)
	}
	seen := map[string]bool{}
	for i, e := range c.Schedules {
		key := fmt.Sprintf("schedules[%d]", i)
		if e.Name == "" {
			return badKey(key+".name", "every schedule needs a name, e.g. ops-digest")
		}
		key = "schedules." + e.Name
		if !scheduleName.MatchString(e.Name) {
			return badKey(key+".name", "use lower-case letters, digits and - (e.g. ops-digest)")
		}
		if seen[e.Name] {
			return badKey(key+".name", "%q is used twice: give each schedule its own name", e.Name)
		}
		seen[e.Name] = true
		if err := c.validateSchedule(key, e); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateSchedule(key string, e ScheduleConf) error {
	j := e.job()
	if e.At != "" {
		at, err := time.Parse(time.RFC3339, e.At)
		if err != nil {
			return badKey(key+".at", "%q is not an RFC 3339 time: write it like 2026-12-24T09:00:00+01:00", e.At)
		}
		j.Spec.At = at
	}
	if e.Agent != "" && !slices.ContainsFunc(c.Agents, func(a AgentProfileConf) bool { return a.Name == e.Agent }) {
		return badKey(key+".agent", "%q is not in agents:; name one of its profiles, or leave agent out for the place's agent", e.Agent)
	}
	if e.Skill != "" && (len(e.Skill) > 64 || !skillName.MatchString(e.Skill)) {
		return badKey(key+".skill", "%q is not a skill name: use the name in the skill's SKILL.md (1 to 64 lowercase letters, digits and single hyphens, e.g. incident-runbook)", e.Skill)
	}
	if strings.HasPrefix(strings.TrimSpace(e.Deliver), "webhook:") && e.Secret == "" {
		return badKey(key+".secret", "a webhook target needs a secret to sign its deliveries (X-Echogate-Signature): set secret: ${HOOK_SECRET}")
	}
	j.ID, j.Owner = schedule.ConfigID(e.Name), schedule.ConfigOwner
	// The reference instant is before a one-shot's time: a stored `at` that has passed is
	// still a valid config (it ran, or catch-up decides).
	ref := time.Now()
	if !j.Spec.At.IsZero() {
		ref = j.Spec.At.Add(-time.Second)
	}
	if _, err := schedule.CheckJob(j, c.Scheduler.limits(), ref); err != nil {
		return badKey(key, "%v", err)
	}
	return c.validatePrecheck(key+".precheck", e.Precheck)
}

// validatePrecheck allows a command only when its first word is an absolute path the operator
// wrote here, or a command of tools.run_command.allowed; an HTTP probe only over https.
func (c *Config) validatePrecheck(key string, p PrecheckConf) error {
	switch {
	case len(p.Command) > 0 && p.HTTP != "":
		return badKey(key, "set command or http, not both")
	case len(p.Command) > 0:
		name := p.Command[0]
		if !filepath.IsAbs(name) && !slices.Contains(c.Tools["run_command"].Allowed, name) {
			return badKey(key+".command", "%q is neither an absolute path nor in tools.run_command.allowed: write the program's absolute path, or allow it there", name)
		}
	case p.HTTP != "":
		u, err := url.Parse(p.HTTP)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return badKey(key+".http", "%q: use an https:// URL without credentials", p.HTTP)
		}
	}
	return nil
}
