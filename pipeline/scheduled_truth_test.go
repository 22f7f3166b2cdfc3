package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools"
)

// A scheduled run's answer is recorded as the turn's posting before its end is written: a
// process killed between the turn's end and the run's outcome leaves a turn log from which the
// next start reads "delivered" (the message id), not "unconfirmed".
func TestScheduledRunRecordsItsPostingBeforeItsEnd(t *testing.T) {
	e := newEnds()
	h := start(t, opts{deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }}, agenttest.Reply("3 incidents, all resolved."))
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:digest", Slot: slot, Config: true}))
	s := e.next(t)
	if s.Posted.IsZero() {
		t.Fatalf("AfterScheduled = %+v, want the posted message", s)
	}
	if got, err := h.store.GetPosting(context.Background(), s.Turn); got != s.Posted {
		t.Errorf("GetPosting(%s) = %+v, %v; want the posted message %+v", s.Turn, got, err, s.Posted)
	}
}

// A scheduled run is not offered ask_user: nobody is there to answer, and a run may not wait
// forever for one; a chat turn still is.
func TestScheduledRunIsNeverOfferedAskUser(t *testing.T) {
	e := newEnds()
	ask := newTool("ask_user", tools.Safe, "ok")
	clock := newTool("current_time", tools.Safe, "ok")
	h := start(t, opts{tools: []tools.Tool{ask, clock}, deps: func(d *pipeline.Deps) { d.AfterScheduled = e.add }},
		agenttest.Reply("a"), agenttest.Reply("b"))
	h.submit(msg("chat", "ann", "hi"))
	h.waitDone()
	h.submit(runEvent("ops", echogate.ScheduledRun{Job: "config:digest", Slot: slot, Config: true}))
	e.next(t)
	reqs := h.model.Requests()
	offered := func(r agent.Request) string {
		var out []string
		for _, s := range r.Tools {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	if got := offered(reqs[0]); !strings.Contains(got, "ask_user") {
		t.Errorf("a chat turn's tools = %s, want ask_user offered", got)
	}
	if got := offered(reqs[1]); strings.Contains(got, "ask_user") || !strings.Contains(got, "current_time") {
		t.Errorf("a scheduled run's tools = %s, want current_time and never ask_user", got)
	}
}
