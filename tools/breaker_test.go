package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/tooltest"
)

var errBoom = errors.New("backend down")

// transitions records onState calls.
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) record(tool, from, to string) {
	tr.mu.Lock()
	tr.got = append(tr.got, tool+":"+from+"->"+to)
	tr.mu.Unlock()
}

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.got...)
}

// fakeClock is the breakers' injected clock: tests move it past the cool-down, no sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// pass moves the clock by d and checks that b then reports want.
func (c *fakeClock) pass(t *testing.T, d time.Duration, b tools.Tool, want string) {
	t.Helper()
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	if got := b.(*tools.Breaker).State(); got != want {
		t.Fatalf("State() %s later = %s, want %s", d, got, want)
	}
}

func call(t *testing.T, tool tools.Tool) (tools.Result, error) {
	t.Helper()
	return tool.Call(context.Background(), json.RawMessage(`{}`))
}

func TestBreakerOpensFailsFastAndProbeCloses(t *testing.T) {
	fake := tooltest.NewFake("flaky",
		tooltest.Step{Err: errBoom}, tooltest.Step{Err: errBoom}, tooltest.Step{Err: errBoom},
		tooltest.Step{Result: tools.Result{Content: "recovered"}})
	var tr transitions
	clk := newFakeClock()
	b := tools.WithBreaker(fake, tools.BreakerConfig{Failures: 3, CoolDown: 30 * time.Second, Now: clk.Now}, nil, tr.record)

	for i := range 3 {
		if _, err := call(t, b); !errors.Is(err, errBoom) {
			t.Fatalf("call %d: err = %v, want %v", i+1, err, errBoom)
		}
	}
	if got := b.(*tools.Breaker).State(); got != "open" {
		t.Fatalf("State() after 3 failures = %s, want open", got)
	}
	res, err := call(t, b)
	if err != nil || !res.IsError || !strings.Contains(res.Content, "tool flaky unavailable: circuit open after 3 consecutive failures; try again after 12:00:30 UTC (in 30s)") {
		t.Fatalf("Call while open = %+v, %v, want IsError 'tool flaky unavailable: circuit open after 3 consecutive failures; try again after 12:00:30 UTC (in 30s)'", res, err)
	}
	if got := fake.Calls(); got != 3 {
		t.Fatalf("tool ran %d times, want 3 (no run while open)", got)
	}

	clk.pass(t, 30*time.Second-time.Millisecond, b, "open")
	clk.pass(t, time.Millisecond, b, "half-open")
	res, err = call(t, b)
	if err != nil || res.IsError || res.Content != "recovered" {
		t.Fatalf("probe = %+v, %v, want the tool's result", res, err)
	}
	if got := b.(*tools.Breaker).State(); got != "closed" {
		t.Fatalf("State() after good probe = %s, want closed", got)
	}
	want := []string{"flaky:closed->open", "flaky:open->half-open", "flaky:half-open->closed"}
	if got := tr.list(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("transitions = %v, want %v", got, want)
	}
}

func TestBreakerFailedProbeReopens(t *testing.T) {
	fake := tooltest.NewFake("flaky")
	fake.Default = tooltest.Step{Err: errBoom}
	clk := newFakeClock()
	b := tools.WithBreaker(fake, tools.BreakerConfig{Failures: 1, CoolDown: 50 * time.Millisecond, Now: clk.Now}, nil, nil)
	if _, err := call(t, b); !errors.Is(err, errBoom) {
		t.Fatalf("first call err = %v, want %v", err, errBoom)
	}
	clk.pass(t, 50*time.Millisecond, b, "half-open")
	if _, err := call(t, b); !errors.Is(err, errBoom) {
		t.Fatalf("probe err = %v, want %v", err, errBoom)
	}
	res, err := call(t, b)
	if err != nil || !strings.Contains(res.Content, "after a failed recovery probe") {
		t.Fatalf("Call after failed probe = %+v, %v, want 'after a failed recovery probe'", res, err)
	}
	if got := fake.Calls(); got != 2 {
		t.Fatalf("tool ran %d times, want 2", got)
	}
}

func TestBreakerHalfOpenLetsOneProbe(t *testing.T) {
	gate := make(chan struct{})
	fake := tooltest.NewFake("slow", tooltest.Step{Err: errBoom}, tooltest.Step{Gate: gate, Result: tools.Result{Content: "ok"}})
	fake.Started = make(chan int, 4)
	clk := newFakeClock()
	b := tools.WithBreaker(fake, tools.BreakerConfig{Failures: 1, CoolDown: 50 * time.Millisecond, Now: clk.Now}, nil, nil)
	call(t, b)
	<-fake.Started
	clk.pass(t, 50*time.Millisecond, b, "half-open")

	probe := make(chan tools.Result, 1)
	go func() {
		res, _ := call(t, b)
		probe <- res
	}()
	<-fake.Started // the probe is in flight
	res, err := call(t, b)
	if err != nil || !res.IsError || !strings.Contains(res.Content, "half-open") {
		t.Fatalf("Call during probe = %+v, %v, want IsError mentioning half-open", res, err)
	}
	close(gate)
	if got := <-probe; got.Content != "ok" {
		t.Fatalf("probe = %+v, want ok", got)
	}
	if got := fake.Calls(); got != 2 {
		t.Fatalf("tool ran %d times, want 2", got)
	}
}

func TestBreakerCounting(t *testing.T) {
	ask := &tools.AskUserError{Question: "which?"}
	for name, tt := range map[string]struct {
		step     tooltest.Step
		wantOpen bool
		check    func(tools.Result, error) bool
	}{
		"go error counts": {tooltest.Step{Err: errBoom}, true,
			func(r tools.Result, err error) bool { return errors.Is(err, errBoom) }},
		"panic counts and becomes an error": {tooltest.Step{Panic: "kaboom"}, true,
			func(r tools.Result, err error) bool {
				var p *tools.PanicError
				return errors.As(err, &p) && err.Error() == "tools: t panicked: kaboom"
			}},
		"explicit Failure counts, model sees result": {tooltest.Step{Err: tools.Failure(tools.Result{Content: "api revoked"})}, true,
			func(r tools.Result, err error) bool { return err == nil && r.IsError && r.Content == "api revoked" }},
		"IsError result (bad arguments) does not count": {tooltest.Step{Result: tools.Errorf("bad url")}, false,
			func(r tools.Result, err error) bool { return err == nil && r.IsError && r.Content == "bad url" }},
		"ask_user does not count": {tooltest.Step{Err: ask}, false,
			func(r tools.Result, err error) bool { return errors.Is(err, ask) }},
	} {
		fake := tooltest.NewFake("t")
		fake.Default = tt.step
		b := tools.WithBreaker(fake, tools.BreakerConfig{Failures: 2, CoolDown: time.Hour}, nil, nil)
		for i := range 2 {
			res, err := call(t, b)
			if !tt.check(res, err) {
				t.Errorf("%s: call %d = %+v, %v, unexpected", name, i+1, res, err)
			}
		}
		if got := b.(*tools.Breaker).State() == "open"; got != tt.wantOpen {
			t.Errorf("%s: open after 2 calls = %v, want %v", name, got, tt.wantOpen)
		}
	}
}

func TestBreakerCallerCancelDoesNotCount(t *testing.T) {
	fake := tooltest.NewFake("t")
	fake.Default = tooltest.Step{Gate: make(chan struct{})} // never opens: only ctx ends the call
	fake.Started = make(chan int)
	b := tools.WithBreaker(fake, tools.BreakerConfig{Failures: 1, CoolDown: time.Hour}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.Call(ctx, nil)
		done <- err
	}()
	<-fake.Started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	if got := b.(*tools.Breaker).State(); got != "closed" {
		t.Fatalf("State() after caller cancel = %s, want closed", got)
	}
	// A ctx already cancelled never reaches the tool.
	if _, err := b.Call(ctx, nil); !errors.Is(err, context.Canceled) || fake.Calls() != 1 {
		t.Fatalf("Call(cancelled) = %v with %d tool runs, want context.Canceled and 1 run", err, fake.Calls())
	}
}

func TestBreakerCallTimeoutCounts(t *testing.T) {
	fake := tooltest.NewFake("t")
	fake.Default = tooltest.Step{Gate: make(chan struct{})}
	b := tools.WithBreaker(fake, tools.BreakerConfig{Failures: 1, CoolDown: time.Hour, CallTimeout: 20 * time.Millisecond}, nil, nil)
	_, err := call(t, b)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "tools: t timed out after 20ms") {
		t.Fatalf("Call = %v, want 'tools: t timed out after 20ms' wrapping DeadlineExceeded", err)
	}
	if got := b.(*tools.Breaker).State(); got != "open" {
		t.Fatalf("State() after timeout = %s, want open", got)
	}
}

func TestRecover(t *testing.T) {
	fake := tooltest.NewFake("p", tooltest.Step{Panic: errors.New("nil map")}, tooltest.Step{Result: tools.Result{Content: "fine"}})
	r := tools.Recover(fake)
	_, err := call(t, r)
	var p *tools.PanicError
	if !errors.As(err, &p) || err.Error() != "tools: p panicked: nil map" || len(p.Stack) == 0 {
		t.Fatalf("Call = %v, want *PanicError 'tools: p panicked: nil map' with a stack", err)
	}
	if res, err := call(t, r); err != nil || res.Content != "fine" {
		t.Fatalf("second Call = %+v, %v, want fine", res, err)
	}
	if r.Spec().Name != "p" {
		t.Fatalf("Spec().Name = %q, want p", r.Spec().Name)
	}
	if tools.Recover(r) != r {
		t.Fatalf("Recover(Recover(t)) wrapped twice")
	}
}

func TestBreakerConformance(t *testing.T) {
	fake := tooltest.NewFake("echo")
	fake.Default = tooltest.Step{Result: tools.Result{Content: "hi"}}
	// The fake accepts anything, so only cases are checked here; bad-args handling is the
	// wrapped tool's job and passes through unchanged.
	b := tools.WithBreaker(fake, tools.BreakerConfig{}, nil, nil)
	if _, err := tooltest.CheckSpec(b.Spec()); err != nil {
		t.Fatalf("CheckSpec = %v", err)
	}
	if err := tooltest.CheckCancelled(b, tooltest.Case{Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

func TestBreakerConcurrentRace(t *testing.T) {
	fake := tooltest.NewFake("c")
	fake.Default = tooltest.Step{Result: tools.Result{Content: "ok"}}
	b := tools.WithBreaker(fake, tools.BreakerConfig{}, nil, nil)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if res, err := b.Call(context.Background(), nil); err != nil || res.Content != "ok" {
					t.Errorf("Call = %+v, %v, want ok", res, err)
				}
			}
		})
	}
	wg.Wait()
	if fake.Calls() != 320 {
		t.Fatalf("Calls() = %d, want 320", fake.Calls())
	}
}
