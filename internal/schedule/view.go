package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

// View is a job as GET /api/schedules, the console, the CLI and the `schedule` tool's list
// show it.
type View struct {
	ID          string    `json:"id"`
	Name        string    `json:"name,omitempty"`
	Owner       string    `json:"owner"`
	Agent       string    `json:"agent,omitempty"`
	Deliver     string    `json:"deliver"`
	When        string    `json:"when"` // "cron 0 9 * * MON-FRI (Europe/Berlin)", "every 30m0s", "at 2026-12-24T09:00:00+01:00"
	Prompt      string    `json:"prompt"`
	State       string    `json:"state"` // enabled | paused | done
	NextRun     time.Time `json:"next_run,omitzero"`
	LastOutcome Outcome   `json:"last_outcome,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	LastRunAt   time.Time `json:"last_run_at,omitzero"`
	Failures    int       `json:"failures,omitempty"`
}

// ViewOf is j's View. The next run is the later of the cursor and the back-off.
func ViewOf(j Job) View {
	v := View{ID: j.ID, Name: j.Name, Owner: j.Owner, Agent: j.Agent, Deliver: j.Deliver, When: j.Spec.Describe(),
		Prompt: j.Prompt, State: "enabled", NextRun: j.Next, LastOutcome: j.LastOutcome, LastError: j.LastError,
		LastRunAt: j.LastRunAt, Failures: j.Failures}
	switch {
	case j.Paused:
		v.State = "paused"
	case j.Next.IsZero():
		v.State = "done"
	}
	if j.NotBefore.After(v.NextRun) && !v.NextRun.IsZero() {
		v.NextRun = j.NotBefore
	}
	return v
}

// Describe says when a spec fires, for people.
func (s Spec) Describe() string {
	switch {
	case s.Cron != "":
		tz := s.Timezone
		if tz == "" {
			tz = "UTC"
		}
		return fmt.Sprintf("cron %s (%s)", strings.Join(strings.Fields(s.Cron), " "), tz)
	case s.Every != 0:
		return "every " + s.Every.String()
	case !s.At.IsZero():
		return "at " + s.At.Format(time.RFC3339)
	}
	return "never"
}

// ListText is a person's jobs as the `schedules` command answers (ephemerally) and the tool's
// list returns: one line each, with the next run and the last outcome.
func ListText(jobs []Job) string {
	if len(jobs) == 0 {
		return "No scheduled jobs."
	}
	var b strings.Builder
	for _, j := range jobs {
		v := ViewOf(j)
		label := v.Name
		if label == "" {
			label = v.ID
		}
		fmt.Fprintf(&b, "• %s — %s — %s", label, v.When, v.State)
		if !v.NextRun.IsZero() && v.State == "enabled" {
			fmt.Fprintf(&b, ", next %s", v.NextRun.UTC().Format("2006-01-02 15:04 MST"))
		}
		if v.LastOutcome != "" {
			fmt.Fprintf(&b, ", last %s", v.LastOutcome)
		}
		fmt.Fprintf(&b, ": %s\n", capRunes(v.Prompt, 80))
	}
	return strings.TrimRight(b.String(), "\n")
}

func capRunes(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// Cancel deletes job id for owner (the `schedule` tool's cancel). Another person's job, or a
// config job, is reported as not found: the tool neither touches nor reveals it.
func Cancel(ctx context.Context, st JobStore, id, owner string) error {
	j, err := st.GetJob(ctx, id)
	if err == nil && (j.Owner != owner || owner == "" || owner == ConfigOwner) {
		err = fmt.Errorf("job %s: %w", id, echogate.ErrNotFound)
	}
	if err != nil {
		if errors.Is(err, echogate.ErrNotFound) {
			return fmt.Errorf("schedule: cancel: you have no job %q; list shows your jobs: %w", id, echogate.ErrNotFound)
		}
		return fmt.Errorf("schedule: cancel %s: %w", id, err)
	}
	if err := st.DeleteJob(ctx, id); err != nil {
		return fmt.Errorf("schedule: cancel %s: %w", id, err)
	}
	return nil
}
