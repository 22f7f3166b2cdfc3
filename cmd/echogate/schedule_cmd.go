package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/echogate/echogate/internal/schedule"
)

// cmdSchedule is `echogate schedule list|run|pause|resume`. list, pause and resume work on the
// store (the jobs of `schedules:` are synced into it first, as serve does at start), so they
// work whether or not a gateway runs: a running one sees a pause at its next pass and a resume
// within scheduler's poll (30s). run needs the running gateway, whose adapters deliver the
// answer: it calls POST /api/schedules/{id}/run at http.addr with http.auth_token.
func cmdSchedule(ctx context.Context, e env, cfg *Config, log *slog.Logger, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, "echogate schedule: name a command: list, run, pause, resume (echogate schedule --help)")
		return 2
	}
	sub, rest := args[0], args[1:]
	if sub == "run" {
		return scheduleRun(ctx, e, cfg, rest)
	}
	if sub != "list" && sub != "pause" && sub != "resume" {
		fmt.Fprintf(e.stderr, "echogate schedule: unknown command %q: use list, run, pause or resume\n", sub)
		return 2
	}
	if sub != "list" && len(rest) != 1 {
		fmt.Fprintf(e.stderr, "echogate schedule %s: give one job: its name in schedules: or its id\n", sub)
		return 2
	}
	st, backend, err := openStore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate schedule:", err)
		return 1
	}
	defer st.Close()
	sst, ok := st.(schedule.Store)
	if err := st.Migrate(ctx); err != nil || !ok {
		fmt.Fprintf(e.stderr, "echogate schedule: the %s store keeps no schedules: %v\n", backend, err)
		return 1
	}
	now := time.Now()
	if err := schedule.SyncConfigJobs(ctx, sst, cfg.scheduleJobs(), cfg.Scheduler.limits(), now); err != nil {
		fmt.Fprintln(e.stderr, "echogate schedule: schedules:", err)
	}
	if sub == "list" {
		jobs, err := sst.ListJobs(ctx, "")
		if err != nil {
			fmt.Fprintln(e.stderr, "echogate schedule list:", err)
			return 1
		}
		printJobs(e.stdout, jobs)
		return 0
	}
	j, err := resolveJob(ctx, sst, rest[0])
	if err == nil {
		err = setJobPaused(ctx, sst, j, sub == "pause", now)
	}
	if err == nil {
		j, err = sst.GetJob(ctx, j.ID)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "echogate schedule %s: %v\n", sub, err)
		return 1
	}
	printJobs(e.stdout, []schedule.Job{j})
	return 0
}

// printJobs prints one line per job: id, state, when, next run, last outcome, owner, agent.
func printJobs(w io.Writer, jobs []schedule.Job) {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "No scheduled jobs.")
		return
	}
	for _, j := range jobs {
		v := schedule.ViewOf(j)
		next, last := "-", "-"
		if !v.NextRun.IsZero() {
			next = v.NextRun.UTC().Format(time.RFC3339)
		}
		if v.LastOutcome != "" {
			last = string(v.LastOutcome)
			if v.LastError != "" {
				last += " (" + v.LastError + ")"
			}
		}
		agent := v.Agent
		if agent == "" {
			agent = "(the place's)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\tnext %s\tlast %s\towner %s\tagent %s\tdeliver %s\n", v.ID, v.State, v.When, next, last, v.Owner, agent, v.Deliver)
	}
}

// scheduleRun asks the running gateway to run a job now, once.
func scheduleRun(ctx context.Context, e env, cfg *Config, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(e.stderr, "echogate schedule run: give one job: its name in schedules: or its id")
		return 2
	}
	host, port, err := net.SplitHostPort(cfg.HTTP.Addr)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate schedule run:", err)
		return 1
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	u := "http://" + net.JoinHostPort(host, port) + "/api/schedules/" + url.PathEscape(args[0]) + "/run"
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if cfg.HTTP.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.HTTP.AuthToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(e.stderr, "echogate schedule run: it needs the running gateway (echogate serve), whose channels deliver the answer; none answers at %s: %v\n", cfg.HTTP.Addr, err)
		return 1
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
	if resp.StatusCode != http.StatusAccepted {
		fmt.Fprintf(e.stderr, "echogate schedule run %s: %s: %v\n", args[0], resp.Status, body["error"])
		return 1
	}
	fmt.Fprintf(e.stdout, "Submitted %v (slot %v); `echogate schedule list` shows its outcome once the turn ends.\n", body["id"], body["slot"])
	return 0
}
