package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
)

// resolveJob finds a job by id, or a config job by its name.
func resolveJob(ctx context.Context, st schedule.JobStore, idOrName string) (schedule.Job, error) {
	j, err := st.GetJob(ctx, idOrName)
	if errors.Is(err, echogate.ErrNotFound) {
		j, err = st.GetJob(ctx, schedule.ConfigID(idOrName))
	}
	if errors.Is(err, echogate.ErrNotFound) {
		return j, fmt.Errorf("no scheduled job %q (give a job id, or the name of a job in schedules:; `echogate schedule list` shows them): %w", idOrName, err)
	}
	return j, err
}

// setJobPaused pauses or resumes job j at now. Resuming clears its failures and back-off and
// moves its cursor to its next slot after now: the time it was paused is not caught up.
func setJobPaused(ctx context.Context, st schedule.JobStore, j schedule.Job, paused bool, now time.Time) error {
	var next time.Time
	if !paused {
		if sch, err := schedule.Of(j.Spec); err == nil {
			if n, ok := sch.Next(now); ok {
				next = n
			}
		}
	}
	return st.SetPaused(ctx, j.ID, paused, next, now)
}

// scheduleAPI registers GET /api/schedules and POST /api/schedules/{id}/run|pause|resume
// behind the server's one authentication rule (routes.go).
func (g *gateway) scheduleAPI(mux *routeMux) {
	mux.HandleFunc("GET /api/schedules", func(w http.ResponseWriter, r *http.Request) {
		st, ok := g.scheduleStore(w)
		if !ok {
			return
		}
		jobs, err := st.ListJobs(r.Context(), "")
		views := make([]schedule.View, 0, len(jobs))
		for _, j := range jobs {
			views = append(views, schedule.ViewOf(j))
		}
		writeJSON(w, views, wrapErr("list schedules", err))
	})
	mux.HandleFunc("POST /api/schedules/{id}/run", func(w http.ResponseWriter, r *http.Request) {
		st, ok := g.scheduleStore(w)
		if !ok {
			return
		}
		j, err := resolveJob(r.Context(), st, r.PathValue("id"))
		if err != nil {
			writeJobError(w, err)
			return
		}
		t, err := g.sched.worker.RunNow(r.Context(), j.ID)
		if err != nil {
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusAccepted) // submitted: its outcome is the job's last_outcome once the turn ends
		_ = json.NewEncoder(w).Encode(map[string]any{"id": j.ID, "slot": t.Slot, "event": t.EventKey})
	})
	for action, paused := range map[string]bool{"pause": true, "resume": false} {
		mux.HandleFunc("POST /api/schedules/{id}/"+action, func(w http.ResponseWriter, r *http.Request) {
			st, ok := g.scheduleStore(w)
			if !ok {
				return
			}
			j, err := resolveJob(r.Context(), st, r.PathValue("id"))
			if err == nil {
				err = setJobPaused(r.Context(), st, j, paused, g.sched.clock.Now())
			}
			if err != nil {
				writeJobError(w, err)
				return
			}
			g.sched.worker.Wake()
			j, err = st.GetJob(r.Context(), j.ID)
			writeJSON(w, schedule.ViewOf(j), wrapErr(action+" schedule", err))
		})
	}
}

// scheduleStore is the scheduler's store, or a 503 when this store keeps no schedules.
func (g *gateway) scheduleStore(w http.ResponseWriter) (schedule.Store, bool) {
	if g.sched == nil {
		writeError(w, http.StatusServiceUnavailable, "scheduled work is not available with this store")
		return nil, false
	}
	return g.sched.st, true
}

func writeJobError(w http.ResponseWriter, err error) {
	if errors.Is(err, echogate.ErrNotFound) {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, nil, wrapErr("schedule", err))
}
