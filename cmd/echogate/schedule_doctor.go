package main

import (
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack"
	"github.com/echogate/echogate/internal/schedule"
)

// slackScopeNeeded reports whether doctor asks for Slack bot scope s: im:write (for
// conversations.open) only when a job of schedules: delivers to slack:dm:<user>, so an app
// installed before DM delivery is not told to reinstall for a feature it does not use.
func slackScopeNeeded(cfg *Config, s string) bool {
	if s != slack.MethodScopes["conversations.open"] {
		return true
	}
	for _, e := range cfg.Schedules {
		if tg, err := schedule.ParseTarget(e.Deliver); err == nil && tg.Platform == echogate.PlatformSlack && tg.DMUser != "" {
			return true
		}
	}
	return false
}

// doctorSchedules checks each job of `schedules:` (SPEC "Scheduled work"): its timing and
// fields (schedule.CheckJob, as the config's validation does), its delivery target
// (schedule.ParseTarget), and that the target's platform is configured.
func doctorSchedules(cfg *Config) []check {
	var out []check
	now := time.Now()
	for _, j := range cfg.scheduleJobs() {
		c := check{name: "schedule:" + j.Name}
		j.ID, j.Owner = schedule.ConfigID(j.Name), schedule.ConfigOwner
		ref := now
		if !j.Spec.At.IsZero() && !j.Spec.At.After(now) {
			ref = j.Spec.At.Add(-time.Second) // a one-shot that ran, or catch-up decides
		}
		cj, err := schedule.CheckJob(j, cfg.Scheduler.limits(), ref)
		if err != nil {
			c.detail, c.fix = err.Error(), "correct schedules."+j.Name+" as the message says"
			out = append(out, c)
			continue
		}
		tg, err := schedule.ParseTarget(j.Deliver)
		switch {
		case err != nil:
			c.detail, c.fix = err.Error(), "correct schedules."+j.Name+".deliver"
		case tg.Platform == echogate.PlatformSlack && cfg.Slack.BotToken == "":
			c.detail, c.fix = "delivers to Slack, but Slack is not configured", "set SLACK_BOT_TOKEN (and SLACK_APP_TOKEN or SLACK_SIGNING_SECRET), or deliver elsewhere"
		case tg.Platform == echogate.PlatformDiscord && cfg.Discord.Token == "":
			c.detail, c.fix = "delivers to Discord, but Discord is not configured", "set DISCORD_BOT_TOKEN, or deliver elsewhere"
		default:
			c.ok = true
			c.detail = fmt.Sprintf("%s, next run %s, delivers to %s", j.Spec.Describe(), cj.Next.UTC().Format(time.RFC3339), j.Deliver)
		}
		out = append(out, c)
	}
	return out
}
