package pipeline

import (
	"context"
	"log/slog"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
)

// cmdSchedules lists the sender's scheduled jobs (`/echogate schedules`, `!schedules`,
// `/schedules`).
const cmdSchedules = "schedules"

// ScheduleLister is what the schedules command reads: a person's jobs.
type ScheduleLister interface {
	ListJobs(ctx context.Context, owner string) ([]schedule.Job, error)
}

// schedulesCommand answers the sender alone with their own jobs, each with its next run and
// last outcome.
func (p *Pipeline) schedulesCommand(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent) {
	text := "Scheduled work is not configured on this gateway."
	if p.d.Schedules != nil {
		jobs, err := p.d.Schedules.ListJobs(ctx, ev.Actor.QualifiedID(ev.Conversation.Platform))
		if err != nil {
			log.Error("pipeline: /schedules", "err", err)
			text = "I couldn't read your scheduled jobs just now; try again in a moment."
		} else {
			text = schedule.ListText(jobs)
		}
	}
	p.answerPrivately(ctx, log, ev, text)
}
