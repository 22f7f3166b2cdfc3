package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
)

// Turns one after the other, in different sessions, are served by few workers (waiting ones
// take the next mailbox); shutting down ends their wait: Run returns.
func TestMailboxWorkersAreReused(t *testing.T) {
	var steps []agenttest.Step
	for i := range 20 {
		steps = append(steps, agenttest.Reply(fmt.Sprint("answer ", i)))
	}
	h := start(t, opts{}, steps...)
	for i := range 20 {
		h.submit(msg(fmt.Sprint("s", i), "ann", "hi"))
		if d := h.waitDone(); d.Status != "done" {
			t.Fatalf("turn %d: %+v, want done", i, d)
		}
	}
	h.stop() // returns once every worker, waiting or not, has exited
	if n := pipeline.WorkersStarted(h.p); n >= 20 {
		t.Errorf("mailbox workers started for 20 sequential turns = %d, want fewer (reused)", n)
	}
}
