package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/tools"
)

// ScheduleName is the stable name of the schedule tool (pipeline.ScheduleToolName).
const ScheduleName = "schedule"

// ScheduleConfig configures the schedule tool.
type ScheduleConfig struct {
	Store  schedule.JobStore // required
	Limits schedule.Limits   // scheduler.min_interval and max_per_user
	// Now is the clock; default time.Now. Wake, when set, tells the scheduler a job was created.
	Now  func() time.Time
	Wake func()
}

type scheduleTool struct {
	cfg  ScheduleConfig
	spec tools.Spec
}

type scheduleArgs struct {
	Action string `json:"action"`
	ID     string `json:"id,omitempty"`
	schedule.ToolArgs
}

// NewSchedule returns the schedule tool: a person creates, lists and cancels their own jobs
// (SPEC "Scheduled work"). A job runs for the person who asked, in the conversation it was
// asked in, under that place's agent. A one-shot reminder is safe; a recurring job is
// sensitive (Spec.SafetyOf), so the approval gate asks before it is created.
func NewSchedule(cfg ScheduleConfig) (tools.Tool, error) {
	if cfg.Store == nil {
		return nil, errors.New("schedule tool: a store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	st := &scheduleTool{cfg: cfg}
	st.spec = tools.Spec{Name: ScheduleName, Safety: tools.Sensitive, SafetyOf: scheduleSafety,
		Description: "Schedule work for the user in this conversation: a one-shot reminder (at: RFC 3339 time or \"in 10m\"), " +
			"a recurring job (cron with timezone, or every: \"2h\"); the prompt is what you will be asked to do then, and the " +
			"answer is posted here. Also list the user's jobs, or cancel one by id.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["create","list","cancel"]},` +
			`"prompt":{"type":"string","description":"what to do or remind about when the job runs"},` +
			`"at":{"type":"string","description":"one-shot: RFC 3339 time, or \"in 10m\""},` +
			`"cron":{"type":"string","description":"five-field cron, e.g. \"0 9 * * 1-5\""},` +
			`"timezone":{"type":"string","description":"IANA zone for cron, e.g. Europe/Berlin"},` +
			`"every":{"type":"string","description":"fixed interval, e.g. \"2h\""},` +
			`"id":{"type":"string","description":"the job to cancel"}},"required":["action"]}`)}
	return st, nil
}

func (s *scheduleTool) Spec() tools.Spec { return s.spec }

// scheduleSafety: creating a recurring job is sensitive (it acts and spends again and again);
// a one-shot reminder, a list and a cancel of one's own job are safe.
func scheduleSafety(raw json.RawMessage) tools.Safety {
	var a scheduleArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return tools.Sensitive
	}
	if a.Action == "create" && a.Recurring() {
		return tools.Sensitive
	}
	return tools.Safe
}

// Call acts for the caller (tools.CallerFrom); without one it fails: the tool never acts for
// nobody. Mistakes are IsError results that say what to fix.
func (s *scheduleTool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	c, ok := tools.CallerFrom(ctx)
	if !ok {
		return tools.Result{}, errors.New("schedule tool: called without a caller")
	}
	var a scheduleArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return tools.Errorf("invalid arguments: %v", err), nil
	}
	switch a.Action {
	case "create":
		return s.create(ctx, c, a)
	case "list":
		jobs, err := s.cfg.Store.ListJobs(ctx, c.UserID)
		if err != nil {
			return tools.Result{}, fmt.Errorf("schedule tool: list: %w", err)
		}
		return tools.Result{Content: schedule.ListText(jobs)}, nil
	case "cancel":
		if err := schedule.Cancel(ctx, s.cfg.Store, strings.TrimSpace(a.ID), c.UserID); err != nil {
			if errors.Is(err, echogate.ErrNotFound) {
				return tools.Errorf("%v", err), nil
			}
			return tools.Result{}, err
		}
		return tools.Result{Content: "Cancelled job " + a.ID + "."}, nil
	}
	return tools.Errorf("action %q: use create, list or cancel", a.Action), nil
}

func (s *scheduleTool) create(ctx context.Context, c tools.Caller, a scheduleArgs) (tools.Result, error) {
	deliver, err := deliverTo(c.Conversation)
	if err != nil {
		return tools.Errorf("%v", err), nil
	}
	now := s.cfg.Now()
	j, err := schedule.ChatJob(a.ToolArgs, schedule.Place{Owner: c.UserID, Deliver: deliver, Agent: c.Agent}, ids.New("job_"), s.cfg.Limits, now)
	if err != nil {
		return tools.Errorf("%v", err), nil
	}
	lim := s.cfg.Limits.MaxPerUser
	if lim <= 0 {
		lim = schedule.DefaultMaxPerUser
	}
	if err := s.cfg.Store.CreateJob(ctx, j, lim); err != nil {
		if errors.Is(err, schedule.ErrLimit) {
			return tools.Errorf("you have %d scheduled jobs already (scheduler.max_per_user): cancel one first", lim), nil
		}
		return tools.Result{}, fmt.Errorf("schedule tool: create: %w", err)
	}
	if s.cfg.Wake != nil {
		s.cfg.Wake()
	}
	return tools.Result{Content: fmt.Sprintf("Scheduled job %s (%s), first run %s; its answer will be posted in this conversation.",
		j.ID, j.Spec.Describe(), j.Next.UTC().Format(time.RFC3339))}, nil
}

// deliverTo is the conversation c as a delivery target.
func deliverTo(c echogate.ConversationRef) (string, error) {
	switch c.Platform {
	case echogate.PlatformSlack:
		if c.Thread != "" {
			return "slack:" + c.Channel + "/" + c.Thread, nil
		}
		return "slack:" + c.Channel, nil
	case echogate.PlatformDiscord:
		if c.Thread != "" {
			return "discord:" + c.Thread, nil // a Discord thread is a channel of its own
		}
		return "discord:" + c.Channel, nil
	case echogate.PlatformWeb:
		return "web:" + c.Channel, nil
	}
	return "", fmt.Errorf("scheduled jobs cannot be delivered to a %q conversation; use Slack, Discord or the web chat", c.Platform)
}
