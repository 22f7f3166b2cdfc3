package main

import (
	"context"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/pipeline"
)

// reconcileBatch bounds the runs reconcile looks at per start.
const reconcileBatch = 256

// reconcile finishes, at start, the runs whose turn ended before the process died and whose
// outcome was not recorded (a kill between the turn's end and FinishRun): each is read from
// its turn's record in the turn log, found by the slot's event key, never guessed. A run whose
// turn has not ended is left alone: the pipeline replays its event, and its end records it.
func (s *scheduler) reconcile(ctx context.Context) {
	runs, err := s.st.UnfinishedRuns(ctx, s.clock.Now(), reconcileBatch)
	if err != nil {
		s.c.log.Warn("schedule: list unfinished runs", "err", err)
		return
	}
	for _, r := range runs {
		j, err := s.st.GetJob(ctx, r.JobID)
		if err != nil {
			continue // deleted with its runs
		}
		rec, ok := s.turnOf(ctx, j, r)
		if !ok {
			continue
		}
		end := pipeline.ScheduledEnd{Run: echogate.ScheduledRun{Job: j.ID, Slot: r.Slot}, Turn: rec.ID, Status: rec.Status, Err: rec.Error}
		if rec.Status == echogate.TurnDoneSt {
			end.Posted, _ = s.c.store.GetPosting(ctx, rec.ID)
			end.Quiet = end.Posted.IsZero() && j.QuietIf != "" && s.lastAnswer(ctx, rec) == j.QuietIf
		}
		end.Budget = rec.Status == echogate.TurnAborted && strings.Contains(rec.Error, "budget")
		if o, why := outcomeOf(end); o != "" {
			s.c.log.Info("schedule: recording the outcome a restart lost", "job", j.ID, "slot", r.Slot, "turn", rec.ID, "outcome", o)
			s.record(ctx, j, r.Slot, rec.ID, o, why)
		}
	}
}

// turnOf finds the ended turn of run r in its session.
func (s *scheduler) turnOf(ctx context.Context, j schedule.Job, r schedule.Run) (echogate.TurnRecord, bool) {
	turns, err := s.c.store.ListTurns(ctx, schedule.SessionKey(j, r.Slot), 50)
	if err != nil {
		return echogate.TurnRecord{}, false
	}
	for _, rec := range turns {
		// A turn recovery closed and replayed is not the run's end: the replay's turn is.
		if strings.HasSuffix(rec.EventKey, ":"+r.EventKey) && rec.Status != echogate.TurnRunning && !pipeline.Replayed(rec) {
			return rec, true
		}
	}
	return echogate.TurnRecord{}, false
}

// lastAnswer is the text of the turn's last assistant message.
func (s *scheduler) lastAnswer(ctx context.Context, rec echogate.TurnRecord) string {
	hist, err := s.c.store.History(ctx, rec.Session, 20)
	if err != nil {
		return ""
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if m := hist[i]; m.Turn == rec.ID && m.Message.Role == echogate.RoleAssistant {
			return strings.TrimSpace(m.Message.Content)
		}
	}
	return ""
}
