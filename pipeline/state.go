package pipeline

import (
	"fmt"
	"sync"

	"github.com/echogate/echogate"
)

// State is where a turn is in its lifecycle (DESIGN.md, "The turn's lifecycle"):
//
//	Idle → Processing → Streaming → Response → Done
//	           ├→ ToolExec → Processing                   (tool result fed back)
//	           ├→ WaitingApproval → ToolExec | Processing (approved | denied); durable pause
//	           └→ Clarifying → Processing                 (ask_user; the answer resumes it)
//	any non-terminal → Stopped | Failed
//
// A pause ends the turn in WaitingApproval or Clarifying (the mailbox is free); the turn that
// resumes it starts in that state. Done, Stopped and Failed are terminal.
type State uint8

const (
	StateIdle State = iota
	StateProcessing
	StateStreaming
	StateToolExec
	StateWaitingApproval
	StateClarifying
	StateResponse
	StateDone
	StateStopped
	StateFailed
	stateCount
)

var stateNames = [stateCount]string{"idle", "processing", "streaming", "tool_exec", "waiting_approval",
	"clarifying", "response", "done", "stopped", "failed"}

func (s State) String() string {
	if s < stateCount {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool { return s == StateDone || s == StateStopped || s == StateFailed }

// Resting reports whether a turn may end in s without being terminal: a durable pause.
func (s State) Resting() bool { return s == StateWaitingApproval || s == StateClarifying }

// legal lists the transitions of the lifecycle besides "any non-terminal → Stopped | Failed"
// and staying in the same state (a second model call, concurrent tool calls, more deltas).
var legal = map[State][]State{
	StateIdle:            {StateProcessing},
	StateProcessing:      {StateStreaming, StateToolExec, StateWaitingApproval, StateClarifying, StateResponse},
	StateStreaming:       {StateProcessing, StateToolExec, StateWaitingApproval, StateClarifying, StateResponse},
	StateToolExec:        {StateProcessing, StateWaitingApproval, StateClarifying},
	StateWaitingApproval: {StateToolExec, StateProcessing},
	StateClarifying:      {StateProcessing},
	StateResponse:        {StateDone},
}

// ErrIllegalTransition is wrapped by Transition's refusals.
var ErrIllegalTransition = fmt.Errorf("pipeline: illegal turn transition")

// Transition checks the move from one state to another and returns to, or an error wrapping
// ErrIllegalTransition naming both. It is the one place that decides what the lifecycle
// allows; Lifecycle.Enter applies it.
func Transition(from, to State) (State, error) {
	if from >= stateCount || to >= stateCount {
		return from, fmt.Errorf("%w: unknown state %d → %d", ErrIllegalTransition, from, to)
	}
	if from.Terminal() {
		return from, fmt.Errorf("%w: %s is terminal (→ %s)", ErrIllegalTransition, from, to)
	}
	if from == to || to == StateStopped || to == StateFailed {
		return to, nil
	}
	for _, s := range legal[from] {
		if s == to {
			return to, nil
		}
	}
	return from, fmt.Errorf("%w: %s → %s", ErrIllegalTransition, from, to)
}

// Lifecycle is one turn's current state. Enter is safe for concurrent use (the agent loop
// reports events from tool goroutines).
type Lifecycle struct {
	mu    sync.Mutex
	state State
	// onEnter, when set, sees every transition that changed the state (tests, logs).
	onEnter func(from, to State)
}

// NewLifecycle starts a lifecycle in s: Idle for a new turn, WaitingApproval or Clarifying
// for a resumed one.
func NewLifecycle(s State) *Lifecycle { return &Lifecycle{state: s} }

// State returns the current state.
func (l *Lifecycle) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Enter moves to `to`. It returns true when the state changed, false when the turn was in
// `to` already, and an error (the state unchanged) when the move is illegal.
func (l *Lifecycle) Enter(to State) (bool, error) {
	l.mu.Lock()
	from := l.state
	next, err := Transition(from, to)
	if err != nil || next == from {
		l.mu.Unlock()
		return false, err
	}
	l.state = next
	hook := l.onEnter
	l.mu.Unlock()
	if hook != nil {
		hook(from, next)
	}
	return true, nil
}

// turnEventOf is the turn event a transition announces, if any: the start (of a new turn, or
// of a resumed one leaving its pause), the failure and the pause are seen by users because the
// turn entered that state. (Deltas, tool calls and
// results carry data of the state the turn is in and are sent within it.)
func turnEventOf(from, to State) (echogate.TurnEventType, bool) {
	switch {
	case from == StateIdle && to == StateProcessing, from.Resting() && !to.Resting() && !to.Terminal():
		// A new turn starts, or a resumed one leaves its pause.
		return echogate.TurnStarted, true
	case to == StateFailed:
		return echogate.TurnError, true
	case to == StateWaitingApproval:
		return echogate.TurnApprovalRequest, true
	case to == StateClarifying:
		return echogate.TurnAsk, true
	}
	return "", false
}

// statusOf is the turn record's status for a state the turn ended in.
func statusOf(s State) echogate.TurnStatus {
	switch s {
	case StateDone:
		return echogate.TurnDoneSt
	case StateStopped:
		return echogate.TurnAborted
	case StateFailed:
		return echogate.TurnFailed
	case StateWaitingApproval, StateClarifying:
		return echogate.TurnPaused
	}
	return echogate.TurnRunning
}
