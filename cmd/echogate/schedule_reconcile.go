package main

import (
	"context"
	"slices"
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
			msgs := s.turnMessages(ctx, rec)
			end.Posted, _ = s.c.store.GetPosting(ctx, rec.ID)
			end.Quiet = end.Posted.IsZero() && j.QuietIf != "" && lastAnswer(msgs) == j.QuietIf
			end.Denied = slices.ContainsFunc(msgs, pipeline.UnattendedDenial)
			for _, m := range msgs {
				if why, ok := pipeline.DecisionRefusal(m); ok && end.Err == "" {
					end.Denied, end.Err = true, why
				}
			}
			if end.Posted.IsZero() && !end.Quiet {
				end.Posted = s.lookUpAnswer(ctx, rec)
			}
		}
		end.Budget = rec.Status == echogate.TurnAborted && strings.Contains(rec.Error, "budget")
		if o, why := outcomeOf(end); o != "" {
			s.c.log.Info("schedule: recording the outcome a restart lost", "job", j.ID, "slot", r.Slot, "turn", rec.ID, "outcome", o)
			s.record(ctx, j, r.Slot, rec.ID, o, why)
		}
	}
}

// turnOf finds the ended turn of run r in its session: the slot's; for a run that paused for an
// approval in a session of its own, the turn that resumed it (the newest of the session) once
// it ended. ok is false while the run has not ended.
func (s *scheduler) turnOf(ctx context.Context, j schedule.Job, r schedule.Run) (echogate.TurnRecord, bool) {
	turns, err := s.c.store.ListTurns(ctx, schedule.SessionKey(j, r.Slot), 50)
	if err != nil {
		return echogate.TurnRecord{}, false
	}
	for _, rec := range turns {
		// A turn recovery closed and replayed is not the run's end: the replay's turn is.
		if !strings.HasSuffix(rec.EventKey, ":"+r.EventKey) || rec.Status == echogate.TurnRunning || pipeline.Replayed(rec) {
			continue
		}
		if rec.Status == echogate.TurnPaused && j.Session != "shared" && len(turns) > 0 {
			// Newest first: the turn that resumed the run (or paused it again, or still runs).
			if last := turns[0]; last.ID != rec.ID && last.Status != echogate.TurnRunning && !pipeline.Replayed(last) {
				return last, true
			}
		}
		return rec, true
	}
	return echogate.TurnRecord{}, false
}

// turnMessages are the transcript's messages of turn rec.
func (s *scheduler) turnMessages(ctx context.Context, rec echogate.TurnRecord) []echogate.Message {
	hist, err := s.c.store.History(ctx, rec.Session, 50)
	if err != nil {
		return nil
	}
	var out []echogate.Message
	for _, m := range hist {
		if m.Turn == rec.ID {
			out = append(out, m.Message)
		}
	}
	return out
}

// lastAnswer is the text of the last assistant message of msgs.
func lastAnswer(msgs []echogate.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == echogate.RoleAssistant {
			return strings.TrimSpace(msgs[i].Content)
		}
	}
	return ""
}

// lookUpAnswer asks the platform for the answer of a done turn whose posting was not recorded
// (the posting write failed, or the turn ended before postings were recorded): found, its
// message is recorded as the turn's posting and the run is delivered; not found (or a platform
// that cannot look), zero: the run stays unconfirmed, which is what can be told.
func (s *scheduler) lookUpAnswer(ctx context.Context, rec echogate.TurnRecord) echogate.MessageRef {
	info, err := s.c.store.GetSession(ctx, rec.Session)
	if err != nil {
		return echogate.MessageRef{}
	}
	finder, ok := s.repliers[info.Conversation.Platform].(pipeline.ReplyFinder)
	if !ok {
		return echogate.MessageRef{}
	}
	ref, _, found, err := finder.FindReply(ctx, info.Conversation, rec.ID, echogate.OutReply)
	if err != nil || !found {
		if err != nil {
			s.c.log.Warn("schedule: look up a run's answer on the platform", "turn", rec.ID, "err", err)
		}
		return echogate.MessageRef{}
	}
	if err := s.c.store.RecordPosting(ctx, rec.ID, ref); err != nil {
		s.c.log.Warn("schedule: record the answer found on the platform", "turn", rec.ID, "err", err)
	}
	return ref
}
