package schedule

import (
	"fmt"
	"strings"
	"time"
)

// ToolArgs are the `schedule` tool's create arguments (SPEC "Scheduled work"): a prompt and
// exactly one of At ("2026-12-08T10:00:00+01:00" or "in 10m"), Cron (with Timezone) and Every
// ("2h").
type ToolArgs struct {
	Prompt   string `json:"prompt"`
	At       string `json:"at,omitempty"`
	Cron     string `json:"cron,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	Every    string `json:"every,omitempty"`
}

// Recurring reports whether the job repeats: the tool is sensitive then, safe for a one-shot
// reminder to the same conversation.
func (a ToolArgs) Recurring() bool { return strings.TrimSpace(a.At) == "" }

// Place is where a chat job was created: it runs there and for that person.
type Place struct {
	Owner   string // the qualified user id of the person who asked
	Deliver string // the conversation, as a delivery target (slack:C1/ts, discord:dm:U1, web:S…)
	Agent   string // the place's agent
}

// ChatJob builds and validates the job the `schedule` tool creates: owned by the person who
// asked, delivered to the conversation it came from, run by that place's agent. id is the new
// job's id (random, from the caller). Errors wrap ErrInvalid and say which argument to fix, in
// words the model can pass on.
func ChatJob(a ToolArgs, p Place, id string, lim Limits, now time.Time) (Job, error) {
	if strings.TrimSpace(a.Prompt) == "" {
		return Job{}, fmt.Errorf("%w: prompt is empty; say what to do or remind about", ErrInvalid)
	}
	spec := Spec{Cron: strings.TrimSpace(a.Cron), Timezone: strings.TrimSpace(a.Timezone)}
	if s := strings.TrimSpace(a.Every); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return Job{}, fmt.Errorf("%w: every %q: give a positive duration such as \"30m\" or \"2h\"", ErrInvalid, a.Every)
		}
		spec.Every = d
	}
	if s := strings.TrimSpace(a.At); s != "" {
		t, err := ParseWhen(s, now)
		if err != nil {
			return Job{}, err
		}
		spec.At = t
	}
	j := Job{ID: id, Owner: p.Owner, Deliver: p.Deliver, Agent: p.Agent, Prompt: strings.TrimSpace(a.Prompt), Spec: spec,
		CreatedAt: now, UpdatedAt: now}
	return CheckJob(j, lim, now)
}
