package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/internal/netguard"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/builtin"
)

// scheduler is serve's scheduled work (SPEC "Scheduled work"): the worker that claims due
// slots, the adapter that turns each into a turn of the pipeline (as a platform adapter hands
// its events to the pipeline's sink), and the record of each run's outcome when its turn ends.
type scheduler struct {
	c        *core
	st       schedule.Store
	clock    schedule.Clock
	worker   *schedule.Worker
	repliers map[string]pipeline.Replier
	cfg      atomic.Pointer[Config] // the jobs' prechecks and approval.unattended, swapped on reload
}

// scheduleClockKey carries a test's clock for the scheduler (withScheduleClock).
type scheduleClockKey struct{}

// withScheduleClock makes serve's scheduler run on clock: tests drive it without sleeping.
func withScheduleClock(ctx context.Context, clock schedule.Clock) context.Context {
	return context.WithValue(ctx, scheduleClockKey{}, clock)
}

// wireSchedule makes the scheduler when the store keeps schedules, and gives the pipeline the
// two hooks a scheduled run needs: its outcome at the turn's end and its per-run budget.
func (c *core) wireSchedule(deps *pipeline.Deps, repliers map[string]pipeline.Replier) error {
	st, ok := c.store.(schedule.Store)
	if !ok {
		return nil
	}
	clock := c.schedClock
	if clock == nil {
		clock = schedule.SystemClock{}
	}
	s := &scheduler{c: c, st: st, clock: clock, repliers: repliers}
	s.cfg.Store(c.cfg)
	w, err := schedule.NewWorker(schedule.Config{Replica: replicaName(), StaleAfter: time.Duration(c.cfg.Scheduler.StaleAfter), OnPause: s.alert}, st, s.submit, clock, c.log.With("worker", "schedule"))
	if err != nil {
		return err
	}
	s.worker = w
	c.sched = s
	// The terminal chat (a console replier alone) runs no worker and nothing can deliver there
	// later: the tool would only refuse, so it is not offered (nor its schema paid for).
	_, console := repliers[echogate.PlatformConsole]
	if tc := c.cfg.Tools[builtin.ScheduleName]; (tc.Enabled == nil || *tc.Enabled) && !(console && len(repliers) == 1) {
		tool, err := builtin.NewSchedule(builtin.ScheduleConfig{Store: st, Limits: c.cfg.Scheduler.limits(), Now: clock.Now, Wake: w.Wake})
		if err == nil {
			err = c.tools.Add(tool)
		}
		if err != nil {
			return fmt.Errorf("tools.schedule: %w", err)
		}
	}
	deps.AfterScheduled, deps.Schedules = s.finished, st
	fc := c.cfg.Tools["http_fetch"] // webhooks follow http_fetch's SSRF rules
	repliers[webhookPlatform] = newWebhookReplier(s.webhookTarget, c.webhookTLS, netguard.NewGuard(fc.AllowPrivate, nil))
	deps.RunBudget = func(usd float64) (pipeline.Budget, error) {
		return cost.New(cost.Config{Limits: cost.Limits{PerTurnUSD: usd}, Prices: c.models.prices, ModelFor: c.models.modelFor}, c.store, nil)
	}
	return nil
}

// replicaName names this process in its slot claims.
func replicaName() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", h, os.Getpid())
}

// webhookTLSKey carries a test's TLS configuration for webhook deliveries (withWebhookTLS).
type webhookTLSKey struct{}

// withWebhookTLS makes serve's webhook deliveries trust what cfg trusts (a test's server).
func withWebhookTLS(ctx context.Context, cfg *tls.Config) context.Context {
	return context.WithValue(ctx, webhookTLSKey{}, cfg)
}

// scheduleClockOf is the clock withScheduleClock put in ctx; nil means the system's.
func scheduleClockOf(ctx context.Context) schedule.Clock {
	clock, _ := ctx.Value(scheduleClockKey{}).(schedule.Clock)
	return clock
}

// addScheduler makes serve run the scheduler: it is serve's own, not the terminal chat's.
func (c *core) addScheduler() {
	if c.sched == nil {
		return
	}
	if c.workers == nil {
		c.workers = map[string]func(context.Context) error{}
	}
	c.workers["schedule"] = c.sched.run
}

// run syncs the config's jobs, finishes the runs whose outcome a crash lost, and runs the
// worker until ctx ends. Nothing is submitted before the pipeline accepts events.
func (s *scheduler) run(ctx context.Context) error {
	select {
	case <-s.c.pipeline.Started():
	case <-ctx.Done():
		return nil
	}
	cfg := s.cfg.Load()
	if err := schedule.SyncConfigJobs(ctx, s.st, cfg.scheduleJobs(), cfg.Scheduler.limits(), s.clock.Now()); err != nil {
		s.c.log.Error("schedules: some jobs of the configuration were not stored", "err", err)
	}
	s.reconcile(ctx)
	return s.worker.Run(ctx)
}

// reload applies a reloaded configuration's `schedules:` and approval.unattended.
func (s *scheduler) reload(ctx context.Context, cfg *Config) error {
	s.cfg.Store(cfg)
	err := schedule.SyncConfigJobs(ctx, s.st, cfg.scheduleJobs(), cfg.Scheduler.limits(), s.clock.Now())
	s.worker.Wake()
	return err
}

// submit hands one slot to the pipeline as a scheduled run's event: after its precheck, if it
// has one (a precheck that says no finishes the run as skipped, with no model call). A
// duplicate (the slot submitted before a crash) is accepted as nil by the pipeline's dedupe.
func (s *scheduler) submit(ctx context.Context, t schedule.Trigger) error {
	cfg := s.cfg.Load()
	s.c.metrics.ScheduleLagged(t.Lag)
	ev, err := scheduledEvent(t, cfg.Approval.Unattended, s.clock.Now())
	if err != nil {
		return err
	}
	if pc := cfg.schedulePrecheck(t.Job.Name); t.Job.Owner == schedule.ConfigOwner && !pc.IsZero() {
		pctx, cancel := context.WithTimeout(ctx, precheckTimeout+5*time.Second)
		ok, why, err := runPrecheck(pctx, cfg, pc)
		cancel()
		if err != nil {
			return err
		}
		if !ok {
			s.record(ctx, t.Job, t.Slot, "", schedule.OutcomeSkipped, why)
			return nil
		}
	}
	if sk := cfg.scheduleSkill(t.Job.Name); t.Job.Owner == schedule.ConfigOwner && sk != "" {
		if !s.c.skillInstalled(sk) {
			s.record(ctx, t.Job, t.Slot, "", schedule.OutcomeFailed, fmt.Sprintf("skill %q is not installed (or was refused): see echogate skills check", sk))
			return nil
		}
		ev.Text = skillPrompt(sk, ev.Text)
	}
	if ok, err := s.placeDM(ctx, t, &ev); !ok { // schedule_dm.go: a DM target is opened now
		return err
	}
	err = s.c.pipeline.Submit(ctx, ev)
	if errors.Is(err, pipeline.ErrShuttingDown) {
		// Not queued: the slot's claim stays unsubmitted and is taken over at the next start.
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// scheduledEvent is the event of trigger t: the job's owner acts (a config job's actor is
// "schedule:<name>"), in a session of its own (schedule.SessionKey), at the delivery place.
func scheduledEvent(t schedule.Trigger, unattended string, now time.Time) (echogate.InboundEvent, error) {
	j := t.Job
	tg, err := schedule.ParseTarget(j.Deliver)
	if err != nil {
		return echogate.InboundEvent{}, err
	}
	conv := deliveryConv(j, tg) // for a DM target, its platform alone: submit opens the DM (placeDM)
	actor := echogate.Actor{ID: "schedule:" + j.Name}
	if j.Owner != schedule.ConfigOwner {
		plat, id, _ := strings.Cut(j.Owner, ":")
		if plat != tg.Platform {
			return echogate.InboundEvent{}, fmt.Errorf("schedule %s: owner %s is not a %s user", j.ID, j.Owner, tg.Platform)
		}
		actor = echogate.Actor{ID: id}
	}
	conv.DM = tg.DMUser != "" || tg.Platform == echogate.PlatformSlack && strings.HasPrefix(conv.Channel, "D")
	return echogate.InboundEvent{ID: t.EventKey, Kind: echogate.KindMention, Conversation: conv, Session: schedule.SessionKey(j, t.Slot),
		Actor: actor, Text: j.Prompt, ReceivedAt: now,
		Scheduled: &echogate.ScheduledRun{Job: j.ID, Slot: t.Slot, BudgetUSD: j.BudgetUSD, QuietIf: j.QuietIf, Agent: j.Agent,
			Unattended: unattended, Config: j.Owner == schedule.ConfigOwner}}, nil
}

// deliveryConv is the conversation a job's messages go to: the target's, or for a webhook the
// job itself (the webhook replier finds its URL and secret by the job's id).
func deliveryConv(j schedule.Job, tg schedule.Target) echogate.ConversationRef {
	if tg.Platform == webhookPlatform {
		return echogate.ConversationRef{Platform: webhookPlatform, Channel: j.ID}
	}
	return tg.Conversation()
}

// webhookTarget is the URL and secret of a webhook job: the URL from the stored job, the
// secret from the configuration (swapped on reload).
func (s *scheduler) webhookTarget(ctx context.Context, jobID string) (string, string, error) {
	j, err := s.st.GetJob(ctx, jobID)
	if err != nil {
		return "", "", err
	}
	tg, err := schedule.ParseTarget(j.Deliver)
	if err != nil || tg.Platform != webhookPlatform {
		return "", "", fmt.Errorf("deliver %q is not a webhook", j.Deliver)
	}
	secret := s.cfg.Load().scheduleSecret(j.Name)
	if secret == "" {
		return "", "", fmt.Errorf("schedules.%s.secret is not set", j.Name)
	}
	return tg.Webhook, secret, nil
}

// finished records how a scheduled run's turn ended (Deps.AfterScheduled). A paused run (an
// approval prompt under approval.unattended: prompt) is not finished yet.
func (s *scheduler) finished(ctx context.Context, e pipeline.ScheduledEnd) {
	o, why := outcomeOf(e)
	if o == "" {
		return
	}
	if e.Run.Job == "" { // a run resumed after its approval prompt was decided
		var ok bool
		if e.Run, ok = s.runOfSession(ctx, e.Session); !ok {
			return
		}
	}
	j, err := s.st.GetJob(ctx, e.Run.Job)
	if err != nil {
		s.c.log.Warn("schedule: the finished run's job is gone", "job", e.Run.Job, "err", err)
		return
	}
	s.record(ctx, j, e.Run.Slot, e.Turn, o, why)
}

// runOfSession is the run a scheduled session belongs to: its slot for an isolated session
// (schedule:<job>:<unix>), the job's oldest submitted unfinished run for a shared one.
func (s *scheduler) runOfSession(ctx context.Context, key echogate.SessionKey) (echogate.ScheduledRun, bool) {
	rest := strings.TrimPrefix(string(key), "schedule:")
	if i := strings.LastIndex(rest, ":"); i > 0 {
		if unix, err := strconv.ParseInt(rest[i+1:], 10, 64); err == nil {
			if _, err := s.st.GetJob(ctx, rest[:i]); err == nil {
				return echogate.ScheduledRun{Job: rest[:i], Slot: time.Unix(unix, 0).UTC()}, true
			}
		}
	}
	runs, err := s.st.ListRuns(ctx, rest, 20)
	if err != nil {
		return echogate.ScheduledRun{}, false
	}
	for i := len(runs) - 1; i >= 0; i-- { // newest first: the oldest unfinished is last
		if r := runs[i]; r.Outcome == "" && !r.SubmittedAt.IsZero() {
			return echogate.ScheduledRun{Job: rest, Slot: r.Slot}, true
		}
	}
	return echogate.ScheduledRun{}, false
}

// record finishes a run, counts it, and posts the one alert when this very run paused its job.
func (s *scheduler) record(ctx context.Context, j schedule.Job, slot time.Time, turn string, o schedule.Outcome, why string) {
	f, err := s.st.FinishRun(ctx, schedule.RunEnd{JobID: j.ID, Slot: slot, TurnID: turn, Outcome: o, Error: why, At: s.clock.Now()})
	if err != nil {
		s.c.log.Error("schedule: record a run's outcome", "job", j.ID, "slot", slot, "outcome", o, "err", err)
		return
	}
	if f.Repeat {
		return
	}
	s.c.metrics.ScheduleRun(jobLabel(j), string(o))
	s.c.log.Info("scheduled run finished", "job", j.ID, "slot", slot, "outcome", o, "turn", turn, "why", why)
	if f.PausedNow {
		s.alert(ctx, f.Job)
	}
}

// jobLabel is a job's metrics label: a config job's name; chat jobs share "chat" (their ids
// would make the label set unbounded).
func jobLabel(j schedule.Job) string {
	if j.Name != "" {
		return j.Name
	}
	return "chat"
}

// alert posts the one notice of a job that paused itself to its delivery place.
func (s *scheduler) alert(ctx context.Context, j schedule.Job) {
	name := j.Name
	if name == "" {
		name = j.ID
	}
	text := fmt.Sprintf("⚠️ Scheduled job %s paused itself after %d failed run(s) in a row (last: %s: %s). Fix the cause, then resume it: `echogate schedule resume %s`.",
		name, j.Failures, j.LastOutcome, capText(j.LastError, 300), name)
	tg, err := schedule.ParseTarget(j.Deliver)
	rep := s.repliers[tg.Platform]
	if err != nil || rep == nil {
		s.c.log.Error("schedule: job paused; its delivery place cannot be told", "job", j.ID, "deliver", j.Deliver)
		return
	}
	conv, err := s.deliveryPlace(ctx, j, tg)
	if err != nil {
		s.c.log.Error("schedule: job paused; its delivery place cannot be told", "job", j.ID, "deliver", j.Deliver, "err", err)
		return
	}
	if _, err := rep.Send(ctx, echogate.Outbound{Kind: echogate.OutNotice, Conversation: conv, Text: text}); err != nil {
		s.c.log.Error("schedule: post the paused job's alert", "job", j.ID, "err", err)
	}
}

func capText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// outcomeOf maps a run's turn end to its outcome ("" while it waits for an approval).
func outcomeOf(e pipeline.ScheduledEnd) (schedule.Outcome, string) {
	switch {
	case e.Status == echogate.TurnPaused:
		return "", ""
	case e.Quiet:
		return schedule.OutcomeQuiet, ""
	case e.Budget:
		return schedule.OutcomeBudget, e.Err
	case e.Denied && e.Err != "": // refused by a person's ❌ or the approval timeout (prompt mode)
		return schedule.OutcomeDenied, e.Err
	case e.Denied:
		return schedule.OutcomeDenied, "a sensitive tool call was refused (approval.unattended: deny)"
	case e.Status == echogate.TurnDoneSt && !e.Posted.IsZero():
		return schedule.OutcomeDelivered, ""
	case e.Status == echogate.TurnDoneSt && e.Err == "",
		strings.Contains(e.Err, context.DeadlineExceeded.Error()) && strings.HasPrefix(e.Err, "post answer"):
		return schedule.OutcomeUnconfirmed, e.Err
	}
	why := e.Err
	if why == "" {
		why = "the turn ended " + string(e.Status)
	}
	return schedule.OutcomeFailed, why
}

// reloadSchedules applies a reloaded configuration's `schedules:`, within 30s.
func (c *core) reloadSchedules(cfg *Config) error {
	if c.sched == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.sched.reload(ctx, cfg); err != nil {
		return fmt.Errorf("schedules: %w", err)
	}
	return nil
}

// skillPrompt asks the model to follow the skill a scheduled job names before its prompt.
func skillPrompt(skill, prompt string) string {
	return fmt.Sprintf("Follow the %q skill for this task: load it with the skill tool first.\n\n%s", skill, prompt)
}

// skillInstalled reports whether the skill is loaded (installed, valid and, with a lock, pinned).
func (c *core) skillInstalled(name string) bool {
	if c.skills == nil {
		return false
	}
	_, ok := c.skills.Skills().Get(name)
	return ok
}
