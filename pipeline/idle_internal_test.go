package pipeline

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// TestIdleSessionsReleased: after N sessions × M turns the pipeline holds each session's cached
// history and session-record mark; the idle sweeps release them all, while a session that had a
// turn since the previous sweep keeps its history.
func TestIdleSessionsReleased(t *testing.T) {
	const sessions, turns = 40, 3
	rep := pipelinetest.NewReplier(echogate.PlatformWeb)
	model := agenttest.NewScriptedModel()
	model.SetDefault(agenttest.Reply("ok"))
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Pointer[time.Time]
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now.Store(&t0)
	advance := func(d time.Duration) { n := now.Load().Add(d); now.Store(&n) }
	p, err := New(Config{Now: func() time.Time { return *now.Load() }}, Deps{Store: pipelinetest.NewMemStore(), Model: model, Tools: reg,
		Repliers: map[string]Replier{echogate.PlatformWeb: pipelinetest.StreamingReplier{Replier: rep}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-p.Started()

	var seq int
	turn := func(session string) {
		t.Helper()
		seq++
		ev := echogate.InboundEvent{ID: fmt.Sprintf("ev%d", seq), Kind: echogate.KindDirect, Text: "hi",
			Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: session, DM: true},
			Actor:        echogate.Actor{ID: "u"}}
		if err := p.Submit(context.Background(), ev); err != nil {
			t.Fatalf("Submit(%s) = %v, want nil", ev.ID, err)
		}
		select {
		case <-rep.Done:
		case <-time.After(10 * time.Second):
			t.Fatalf("turn %s of %s did not finish within 10s", ev.ID, session)
		}
	}
	for m := 0; m < turns; m++ {
		for s := 0; s < sessions; s++ {
			turn(fmt.Sprintf("s%d", s))
		}
	}
	if got := p.hist.len(); got != sessions {
		t.Fatalf("history cache after %d sessions × %d turns holds %d sessions, want %d", sessions, turns, got, sessions)
	}
	if got := p.marks.len(); got != sessions {
		t.Fatalf("marks after %d sessions hold %d, want %d", sessions, got, sessions)
	}

	advance(idleSweepEvery)
	p.sweepIdle(*now.Load()) // everything was used in the epoch that ends here: kept
	if got := p.hist.len(); got != sessions {
		t.Errorf("history cache after one sweep holds %d sessions, want %d (all were used since the previous one)", got, sessions)
	}
	turn("s0") // s0 is active again
	advance(sessionTouchEvery)
	p.sweepIdle(*now.Load())
	if got := p.hist.len(); got != 1 || p.hist.get("web:s0") == nil {
		t.Errorf("history cache after the idle sweep holds %d sessions, want only the active web:s0", got)
	}
	advance(sessionTouchEvery)
	p.sweepIdle(*now.Load())
	p.sweepIdle(*now.Load())
	if got, m := p.hist.len(), p.marks.len(); got != 0 || m != 0 {
		t.Errorf("after s0 went idle too: %d cached histories and %d marks, want none", got, m)
	}
}
