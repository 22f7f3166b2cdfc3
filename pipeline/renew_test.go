package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

// TestQueuedEventStaysWithItsLiveReplica: replica a runs a long turn of a session and a second
// message of it waits in a's mailbox twice agent.replay_after; replica b's janitor takes
// nothing over, because a renews the claims of what it holds. When the long turn ends, a
// answers the second message itself, once and in order.
func TestQueuedEventStaysWithItsLiveReplica(t *testing.T) {
	c, clock := newClaimTable(), newSharedClock()
	gate, entered := make(chan struct{}), make(chan struct{})
	a := startReplica(t, c.view("a"), clock,
		agenttest.Step{Text: "first answer", Gate: gate, Entered: entered}, agenttest.Reply("second answer"))
	b := startReplica(t, c.view("b"), clock) // no steps: a turn on b fails
	first, second := orderedMsg(0, "first"), orderedMsg(1, "second")
	a.submit(first)
	<-entered
	a.submit(second)
	for i := range 4 { // 4 × 30 s: the second message waits twice replay_after
		if !stepClock(t, c, clock, testReplayAfter/2, "a") {
			t.Logf("step %d: replica a did not renew its claims within 10s", i+1)
		}
	}
	keptAndAnswered(t, c, a, gate, "the live replica a", first, second)
	if got, want := strings.Join(a.transcript("renew"), "|"), "user:first|assistant:first answer|user:second|assistant:second answer"; got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
	if n := b.model.Calls(); n != 0 {
		t.Errorf("replica b called its model %d times, want 0", n)
	}
}

// TestDeadReplicaEventsTakenOverAfterLastRenewal: replica a dies (its store calls fail, its
// locks are gone, its Run ends) with a turn running and a message queued; replica b takes
// nothing over until agent.replay_after has passed since a's last renewal, then takes both
// over and answers them in the order they arrived.
func TestDeadReplicaEventsTakenOverAfterLastRenewal(t *testing.T) {
	c, clock := newClaimTable(), newSharedClock()
	entered := make(chan struct{})
	va := c.view("a")
	a := startReplica(t, va, clock, agenttest.Step{Text: "never", Gate: make(chan struct{}), Entered: entered})
	b := startReplica(t, c.view("b"), clock, agenttest.Reply("b first"), agenttest.Reply("b second"))
	first, second := orderedMsg(0, "first"), orderedMsg(1, "second")
	a.submit(first)
	<-entered
	a.submit(second)
	if !stepClock(t, c, clock, testReplayAfter/2, "a") {
		t.Log("replica a did not renew its claims within 10s")
	}
	last := clock.Now()
	va.kill()
	a.stop()

	clock.advance(testReplayAfter - time.Second) // a second short of replay_after since the renewal
	sweptSince(t, c, "b")
	c.mu.Lock()
	taken := c.takenOver()
	c.mu.Unlock()
	if len(taken) != 0 {
		t.Fatalf("events taken over %v after a's last renewal = %v, want none before %v", clock.Now().Sub(last), taken, testReplayAfter)
	}
	clock.advance(2 * time.Second)
	want := []string{first.DedupeKey(), second.DedupeKey()}
	if !c.waitFor(func() bool { return len(c.reclaims["b"]) == 2 }) {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("taken over %v after a's last renewal = %v, want b:%s", clock.Now().Sub(last), c.takenOver(), strings.Join(want, ","))
	}
	for _, ev := range []echogate.InboundEvent{first, second} {
		if d := b.waitDone(); d.EventID != ev.ID {
			t.Fatalf("replica b finished %s, want %s (the order they arrived in)", d.EventID, ev.ID)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if got := strings.Join(c.reclaims["b"], ","); got != strings.Join(want, ",") {
		t.Errorf("b took over %s, want %s", got, strings.Join(want, ","))
	}
}

// TestDrainingReplicaKeepsItsEvents: a replica told to stop (SIGTERM: Run's context ends) still
// renews the claims of the turn it lets finish and of the message queued behind it, for as long
// as agent.drain_timeout lets it drain; the other replica takes neither over, and the draining
// replica answers both.
func TestDrainingReplicaKeepsItsEvents(t *testing.T) {
	c, clock := newClaimTable(), newSharedClock()
	gate, entered := make(chan struct{}), make(chan struct{})
	a := startReplicaDraining(t, c.view("a"), clock, time.Minute,
		agenttest.Step{Text: "first answer", Gate: gate, Entered: entered}, agenttest.Reply("second answer"))
	b := startReplica(t, c.view("b"), clock)
	first, second := orderedMsg(0, "first"), orderedMsg(1, "second")
	a.submit(first)
	<-entered
	a.submit(second)
	a.cancel() // draining from now on
	for i := range 4 {
		if !stepClock(t, c, clock, testReplayAfter/2, "a") {
			t.Logf("step %d: draining replica a did not renew its claims within 10s", i+1)
		}
	}
	keptAndAnswered(t, c, a, gate, "the draining replica a", first, second)
	<-a.done
	if n := b.model.Calls(); n != 0 {
		t.Errorf("replica b called its model %d times, want 0", n)
	}
}

// keptAndAnswered checks that replica b's janitor swept and took none of a's events over, then
// lets a's blocked turn go (gate) and waits for a to answer evs, in order.
func keptAndAnswered(t *testing.T, c *claimTable, a *harness, gate chan struct{}, who string, evs ...echogate.InboundEvent) {
	t.Helper()
	sweptSince(t, c, "b")
	c.mu.Lock()
	taken := c.takenOver()
	c.mu.Unlock()
	if len(taken) != 0 {
		t.Fatalf("events taken over from %s = %v, want none", who, taken)
	}
	close(gate)
	for _, want := range evs {
		if d := a.waitDone(); d.EventID != want.ID || d.Status != "done" {
			t.Fatalf("replica a finished %s (%s), want %s done", d.EventID, d.Status, want.ID)
		}
	}
}
