// Package tooltest holds a scriptable fake tools.Tool and RunConformance, the suite every tool
// implementation must pass.
package tooltest

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/echogate/echogate/tools"
)

// Step scripts one call of a FakeTool. The fields act in this order: wait for Gate (if set),
// wait Delay (if set), panic with Panic (if non-nil), else return Result and Err. While waiting,
// a cancelled ctx makes the call return ctx.Err() at once.
type Step struct {
	Gate   <-chan struct{} // the call waits until Gate is closed or receives
	Delay  time.Duration
	Panic  any
	Result tools.Result
	Err    error
}

// FakeTool is a deterministic, scriptable tools.Tool. Calls consume Steps in order; once they are
// used up every further call plays Default. It records every call and is safe for concurrent use.
// Set the exported fields before the first call.
type FakeTool struct {
	ToolSpec tools.Spec
	Steps    []Step
	Default  Step
	// Started, when non-nil, receives the 1-based number of every call as it starts (the send
	// blocks until received or ctx ends). Tests use it to know a call is in flight without sleeping.
	Started chan int

	mu          sync.Mutex
	calls       int
	args        []json.RawMessage
	inFlight    int
	maxInFlight int
}

// NewFake returns a FakeTool named name (Safe, empty object parameters) playing steps, then the
// zero Step (an empty successful result).
func NewFake(name string, steps ...Step) *FakeTool {
	return &FakeTool{
		ToolSpec: tools.Spec{
			Name:        name,
			Description: "fake tool " + name + " for tests",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":true}`),
			Safety:      tools.Safe,
		},
		Steps: steps,
	}
}

// Spec returns ToolSpec.
func (f *FakeTool) Spec() tools.Spec { return f.ToolSpec }

// Call plays the next step. See Step.
func (f *FakeTool) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.args = append(f.args, append(json.RawMessage(nil), args...))
	step := f.Default
	if n <= len(f.Steps) {
		step = f.Steps[n-1]
	}
	f.inFlight++
	if f.inFlight > f.maxInFlight {
		f.maxInFlight = f.inFlight
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()

	if f.Started != nil {
		select {
		case f.Started <- n:
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	}
	if step.Gate != nil {
		select {
		case <-step.Gate:
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	}
	if step.Delay > 0 {
		timer := time.NewTimer(step.Delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	}
	if step.Panic != nil {
		panic(step.Panic)
	}
	return step.Result, step.Err
}

// Calls returns how many calls started.
func (f *FakeTool) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Args returns a copy of the arguments of every call, in call order.
func (f *FakeTool) Args() []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]json.RawMessage, len(f.args))
	for i, a := range f.args {
		out[i] = append(json.RawMessage(nil), a...)
	}
	return out
}

// InFlight returns how many calls are running now.
func (f *FakeTool) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

// MaxConcurrent returns the highest number of calls that ran at the same time.
func (f *FakeTool) MaxConcurrent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInFlight
}
