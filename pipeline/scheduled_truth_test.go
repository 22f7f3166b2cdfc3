package pipeline_test

import (
	"context"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
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
