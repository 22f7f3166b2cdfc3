package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/internal/access"
	"github.com/echogate/echogate/internal/schedule"
	"github.com/echogate/echogate/internal/schedule/scheduletest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// ends collects Deps.AfterScheduled's reports.
type ends struct {
	mu  sync.Mutex
	got []pipeline.ScheduledEnd
	ch  chan pipeline.ScheduledEnd
}

func newEnds() *ends { return &ends{ch: make(chan pipeline.ScheduledEnd, 8)} }

func (e *ends) add(_ context.Context, s pipeline.ScheduledEnd) {
	e.mu.Lock()
	e.got = append(e.got, s)
	e.mu.Unlock()
	e.ch <- s
}

func (e *ends) next(t *testing.T) pipeline.ScheduledEnd {
	t.Helper()
	select {
	case s := <-e.ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no scheduled run ended within 10s")
		return pipeline.ScheduledEnd{}
	}
}

// runEvent is a scheduled run's event as the wiring builds it.
func runEvent(session string, r echogate.ScheduledRun) echogate.InboundEvent {
	ev := msg(session, "schedule:digest", "Summarize #ops.")
	ev.ID = fmt.Sprintf("schedule:%s:%d", r.Job, r.Slot.Unix())
	ev.Kind = echogate.KindMention
	ev.Scheduled = &r
	return ev
}

var slot = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

func TestScheduledRunReportsTheDeliveredMessage(t *testing.T) {
	e := newEnds()
	h := start(t, opts{deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }}, agenttest.Reply("3 incidents, all resolved."))
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:digest", Slot: slot, Config: true}))
	s := e.next(t)
	if s.Status != echogate.TurnDoneSt || s.Posted.IsZero() || s.Quiet || s.Err != "" || s.Run.Job != "config:digest" {
		t.Fatalf("AfterScheduled = %+v, want done with the posted message's id", s)
	}
	if got := h.rep.Texts(); len(got) != 1 || got[0] != "3 incidents, all resolved." {
		t.Errorf("posts = %q, want the answer once", got)
	}
}

func TestQuietIfAnswerIsRecordedNotPosted(t *testing.T) {
	e := newEnds()
	h := start(t, opts{deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }}, agenttest.Reply(" NOTHING\n"))
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:check", Slot: slot, QuietIf: "NOTHING", Config: true}))
	s := e.next(t)
	if !s.Quiet || !s.Posted.IsZero() || s.Status != echogate.TurnDoneSt {
		t.Fatalf("AfterScheduled = %+v, want quiet, done, nothing posted", s)
	}
	for _, p := range h.rep.Posts() {
		t.Errorf("posted %q, want nothing", p.Out.Text)
	}
	if got := strings.Join(h.transcript("ops"), "|"); !strings.Contains(got, "assistant: NOTHING") {
		t.Errorf("transcript = %s, want the quiet answer recorded", got)
	}
}

func TestScheduledRunIsNeverOfferedTheScheduleTool(t *testing.T) {
	e := newEnds()
	sched := newTool(pipeline.ScheduleToolName, tools.Safe, "ok")
	clock := newTool("current_time", tools.Safe, "ok")
	h := start(t, opts{tools: []tools.Tool{sched, clock}, deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }},
		agenttest.Reply("a"), agenttest.Reply("b"))
	h.submit(msg("chat", "ann", "hi"))
	h.waitDone()
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:digest", Slot: slot, Config: true}))
	e.next(t)
	reqs := h.model.Requests()
	names := func(r agent.Request) (out []string) {
		for _, s := range r.Tools {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(reqs[0]); !strings.Contains(strings.Join(got, ","), "schedule") {
		t.Errorf("a chat turn's tools = %v, want schedule offered", got)
	}
	if got := names(reqs[1]); strings.Contains(strings.Join(got, ","), "schedule") || len(got) == 0 {
		t.Errorf("a scheduled run's tools = %v, want current_time and never schedule", got)
	}
}

func TestPerRunBudgetStopsAScheduledRun(t *testing.T) {
	e := newEnds()
	var asked []float64
	h := start(t, opts{deps: func(d *pipeline.Deps) {
		d.AfterScheduled = e.add
		d.RunBudget = func(usd float64) (pipeline.Budget, error) {
			asked = append(asked, usd)
			return budgetFn(func(_ context.Context, s cost.Scope, _ agent.Request) error {
				if s.Trigger != echogate.TriggerScheduled {
					return fmt.Errorf("scope trigger %q, want scheduled", s.Trigger)
				}
				return fmt.Errorf("per turn $%.2f: %w", usd, agent.ErrBudget)
			}), nil
		}
	}}, agenttest.Reply("spent"))
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:digest", Slot: slot, BudgetUSD: 0.05, Config: true}))
	s := e.next(t)
	if !s.Budget || h.model.Calls() != 0 || len(asked) != 1 || asked[0] != 0.05 {
		t.Fatalf("AfterScheduled = %+v after %d model calls (budgets asked %v), want stopped by budget 0.05 before any call", s, h.model.Calls(), asked)
	}
	if posts := h.rep.Texts(); len(posts) != 0 {
		t.Errorf("posted %q, want nothing: a failed run is recorded, and only a pause alerts the place", posts)
	}
}

func TestUnattendedSensitiveCall(t *testing.T) {
	for _, tt := range []struct {
		unattended string
		wantStatus echogate.TurnStatus
	}{{"", echogate.TurnDoneSt}, {"deny", echogate.TurnDoneSt}, {"prompt", echogate.TurnPaused}} {
		t.Run("unattended="+tt.unattended, func(t *testing.T) {
			e := newEnds()
			del := newTool("delete_file", tools.Sensitive, "deleted")
			h := start(t, opts{tools: []tools.Tool{del}, deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }},
				agenttest.CallTool("delete_file", `{"path":"x"}`), agenttest.Reply("could not delete"))
			h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:cleanup", Slot: slot, Unattended: tt.unattended, Config: true}))
			s := e.next(t)
			if s.Status != tt.wantStatus || del.calls.Load() != 0 {
				t.Fatalf("AfterScheduled = %+v, tool ran %d times; want status %s and no run", s, del.calls.Load(), tt.wantStatus)
			}
			if tt.unattended == "prompt" {
				if s.Denied || len(h.rep.Posts()) == 0 || h.rep.Posts()[0].Out.Kind != echogate.OutApprovalPrompt {
					t.Errorf("prompt mode: denied %v, posts %+v; want the approval prompt posted to the delivery place", s.Denied, h.rep.Posts())
				}
				return
			}
			if !s.Denied {
				t.Errorf("AfterScheduled = %+v, want Denied", s)
			}
			if reqs := h.model.Requests(); len(reqs) < 2 || !strings.Contains(fmt.Sprint(reqs[1].Messages), "approval.unattended: deny") {
				t.Errorf("the model was not told why the call was refused")
			}
		})
	}
}

// `/schedules` lists the sender's own jobs (next run, last outcome), and nobody else's.
func TestSchedulesCommandListsTheSendersJobs(t *testing.T) {
	st := scheduletest.NewMemStore(nil)
	now := time.Now()
	for owner, prompt := range map[string]string{"web:ann": "renew the cert", "web:bob": "bob's secret errand"} {
		j, err := schedule.CheckJob(schedule.Job{ID: "job_" + owner[4:], Owner: owner, Deliver: "web:s1", Prompt: prompt, Spec: schedule.Spec{Every: time.Hour}}, schedule.Limits{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateJob(context.Background(), j, 10); err != nil {
			t.Fatal(err)
		}
	}
	h := start(t, opts{deps: func(d *pipeline.Deps) { d.Schedules = st }})
	h.submit(msg("s1", "ann", "/schedules"))
	d := h.waitDone()
	if !strings.Contains(d.Text, "renew the cert") || strings.Contains(d.Text, "bob") || !strings.Contains(d.Text, "next ") {
		t.Errorf("/schedules = %q, want ann's job with its next run and not bob's", d.Text)
	}
	if h.model.Calls() != 0 {
		t.Errorf("model calls = %d, want 0 (a command)", h.model.Calls())
	}
	h.submit(msg("s2", "carol", "!schedules"))
	if d := h.waitDone(); !strings.Contains(d.Text, "No scheduled jobs") {
		t.Errorf("!schedules of a person without jobs = %q, want \"No scheduled jobs\"", d.Text)
	}
}

// A scheduled run is served by the agent its job names, whatever agent serves the place.
func TestScheduledRunUsesTheJobsAgent(t *testing.T) {
	e := newEnds()
	cfg := pipeline.Config{SystemPrompt: "general", Agents: pipeline.Agents{List: []pipeline.Profile{
		{Name: "oncall", Match: []string{"slack:C9"}, SystemPrompt: "You are the on-call digest writer."}}}}
	h := start(t, opts{cfg: cfg, deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }}, agenttest.Reply("a"), agenttest.Reply("b"))
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:digest", Slot: slot, Agent: "oncall", Config: true}))
	e.next(t)
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:other", Slot: slot, Config: true}))
	e.next(t)
	reqs := h.model.Requests()
	if len(reqs) != 2 || !strings.Contains(fmt.Sprint(reqs[0].Messages), "on-call digest writer") || strings.Contains(fmt.Sprint(reqs[1].Messages), "on-call digest writer") {
		t.Errorf("system prompts = %v; want the oncall agent's for the job naming it and the place's for the other", reqs)
	}
}

// spanRecorder records the attributes of the spans started.
type spanRecorder struct {
	mu    sync.Mutex
	spans map[string][]map[string]string
}

func (r *spanRecorder) Start(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error, map[string]string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spans == nil {
		r.spans = map[string][]map[string]string{}
	}
	r.spans[name] = append(r.spans[name], attrs)
	return ctx, func(error, map[string]string) {}
}

// A scheduled run's turn span names its job and slot (traces per run).
func TestScheduledRunTraceNamesTheJob(t *testing.T) {
	e := newEnds()
	rec := &spanRecorder{}
	start(t, opts{deps: func(d *pipeline.Deps) { d.AfterScheduled, d.Tracer = e.add, rec }}, agenttest.Reply("ok")).
		submit(runEvent("ops", echogate.ScheduledRun{Job: "config:digest", Slot: slot, Config: true}))
	e.next(t)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	turns := rec.spans["echogate.turn"]
	if len(turns) != 1 || turns[0]["echogate.schedule.job"] != "config:digest" || turns[0]["echogate.schedule.slot"] != "2026-12-07T09:00:00Z" {
		t.Errorf("turn spans = %v, want one naming job config:digest and slot 2026-12-07T09:00:00Z", turns)
	}
}

// A chat job whose owner the access rules no longer admit is not run: its submission fails,
// so the scheduler records the run failed instead of waiting for a turn that never comes.
func TestScheduledRunOfARefusedOwnerFailsItsSubmit(t *testing.T) {
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	rules := access.Rules{DMs: true, Users: []string{"slack:UOK"}}
	h := start(t, opts{cfg: pipeline.Config{Access: &rules}, deps: withSlack(slack)}, agenttest.Reply("ok"))
	ev := runEvent("ops", echogate.ScheduledRun{Job: "job_1", Slot: slot})
	ev.Conversation, ev.Actor.ID = echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C1"}, "UMALLORY"
	if err := h.p.Submit(context.Background(), ev); err == nil || !strings.Contains(err.Error(), "access rules") {
		t.Errorf("Submit(a refused owner's run) = %v, want an error naming the access rules", err)
	}
	if h.model.Calls() != 0 {
		t.Errorf("model calls = %d, want 0", h.model.Calls())
	}
}

// A scheduled run over its owner's per-user limit ends as failed (reported, not posted).
func TestScheduledRunOverThePerUserLimitIsReported(t *testing.T) {
	e := newEnds()
	h := start(t, opts{cfg: pipeline.Config{PerUser: pipeline.PerUserLimits{RatePerMinute: 1, Burst: 1}}, deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }},
		agenttest.Reply("first"), agenttest.Reply("second"))
	h.submit(runEvent("a", echogate.ScheduledRun{Job: "config:x", Slot: slot, Config: true}))
	if s := e.next(t); s.Status != echogate.TurnDoneSt {
		t.Fatalf("first run = %+v, want done", s)
	}
	h.submit(runEvent("b", echogate.ScheduledRun{Job: "config:x", Slot: slot.Add(time.Minute), Config: true}))
	if s := e.next(t); s.Status != echogate.TurnFailed || !strings.Contains(s.Err, "not started") {
		t.Errorf("second run = %+v, want failed: not started", s)
	}
	if got := h.rep.Texts(); len(got) != 1 {
		t.Errorf("posts = %q, want only the first answer", got)
	}
}
