package sqlite

import (
	"context"
	"testing"
	"time"
)

// An idle writer with nothing queued runs a call on the caller's goroutine: the call never
// enters the queue, and it has committed when it returns.
func TestIdleWriterRunsCallsDirectly(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	queued := notifyQueued(s)
	before := s.WriteStats()
	if err := s.GrantTool(ctx, "s", "a", "u", time.Time{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-queued:
		t.Error("a call to an idle writer went through the queue; want it run directly")
	default:
	}
	if st := s.WriteStats(); st.Batches-before.Batches != 1 || st.Calls-before.Calls != 1 {
		t.Errorf("WriteStats after one direct call = %+v (before %+v); want 1 batch of 1 call", st, before)
	}
	if got, err := s.Grants(ctx, "s"); err != nil || len(got) != 1 || got[0] != "a" {
		t.Errorf("Grants after the direct call = %v, %v; want [a]", got, err)
	}
}

// While a call is queued (counted in pending from before it enters the queue until the writer
// is done with it), a new call queues behind it instead of running directly, even with the
// writer's mutex free: it cannot overtake a call queued before it.
func TestDirectCallsDoNotOvertakeQueuedOnes(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	wr := s.st.Load().wr
	queued := notifyQueued(s)
	wr.pending.Add(1) // a call on its way into the queue
	errs := make(chan error, 1)
	go func() { errs <- s.GrantTool(ctx, "s", "a", "u", time.Time{}) }()
	answerWithin(t, "the call entering the queue", queued)
	if err := answerWithin(t, "the queued call", errs); err != nil {
		t.Fatal(err)
	}
	wr.pending.Add(-1)
	if got, err := s.Grants(ctx, "s"); err != nil || len(got) != 1 {
		t.Errorf("Grants = %v, %v; want [a]", got, err)
	}
}
