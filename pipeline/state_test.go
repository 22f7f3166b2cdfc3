package pipeline

import (
	"errors"
	"sync"
	"testing"

	"github.com/echogate/echogate"
)

// TestTransition lists every pair of states: the legal moves of the lifecycle, and every
// other pair refused.
func TestTransition(t *testing.T) {
	const (
		I, P, S, X, W, C, R, D, T, F = StateIdle, StateProcessing, StateStreaming, StateToolExec, StateWaitingApproval,
			StateClarifying, StateResponse, StateDone, StateStopped, StateFailed
	)
	allowed := map[[2]State]bool{
		{I, I}: true, {I, P}: true, {I, T}: true, {I, F}: true,
		{P, P}: true, {P, S}: true, {P, X}: true, {P, W}: true, {P, C}: true, {P, R}: true, {P, T}: true, {P, F}: true,
		{S, S}: true, {S, P}: true, {S, X}: true, {S, W}: true, {S, C}: true, {S, R}: true, {S, T}: true, {S, F}: true,
		{X, X}: true, {X, P}: true, {X, W}: true, {X, C}: true, {X, T}: true, {X, F}: true,
		{W, W}: true, {W, X}: true, {W, P}: true, {W, T}: true, {W, F}: true,
		{C, C}: true, {C, P}: true, {C, T}: true, {C, F}: true,
		{R, R}: true, {R, D}: true, {R, T}: true, {R, F}: true,
	}
	for from := State(0); from < stateCount; from++ {
		for to := State(0); to < stateCount; to++ {
			want := allowed[[2]State{from, to}]
			got, err := Transition(from, to)
			switch {
			case want && (err != nil || got != to):
				t.Errorf("Transition(%s, %s) = %s, %v; want %s, nil", from, to, got, err, to)
			case !want && (!errors.Is(err, ErrIllegalTransition) || got != from):
				t.Errorf("Transition(%s, %s) = %s, %v; want %s, ErrIllegalTransition", from, to, got, err, from)
			}
		}
	}
	if _, err := Transition(stateCount, StateIdle); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("Transition(unknown, idle) = %v, want ErrIllegalTransition", err)
	}
}

func TestLifecycleEnter(t *testing.T) {
	l := NewLifecycle(StateIdle)
	var seen []State
	l.onEnter = func(_, to State) { seen = append(seen, to) }
	steps := []struct {
		to      State
		changed bool
		illegal bool
	}{
		{StateProcessing, true, false},
		{StateProcessing, false, false}, // a second model call
		{StateStreaming, true, false},
		{StateDone, false, true}, // an answer is posted in Response first
		{StateResponse, true, false},
		{StateDone, true, false},
		{StateFailed, false, true}, // terminal
	}
	for i, s := range steps {
		changed, err := l.Enter(s.to)
		if changed != s.changed || errors.Is(err, ErrIllegalTransition) != s.illegal {
			t.Errorf("step %d: Enter(%s) = %v, %v; want %v, illegal %v", i, s.to, changed, err, s.changed, s.illegal)
		}
	}
	if l.State() != StateDone || len(seen) != 4 {
		t.Errorf("after the steps: state %s, %d transitions seen (%v); want done, 4", l.State(), len(seen), seen)
	}
}

// TestLifecycleConcurrent: tool goroutines report at once; every Enter is applied whole.
func TestLifecycleConcurrent(t *testing.T) {
	l := NewLifecycle(StateProcessing)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = l.Enter(StateToolExec)
				_, _ = l.Enter(StateProcessing)
			}
		})
	}
	wg.Wait()
	if s := l.State(); s != StateToolExec && s != StateProcessing {
		t.Errorf("state after concurrent tool calls = %s", s)
	}
}

func TestTurnEventOf(t *testing.T) {
	for _, tt := range []struct {
		from, to State
		want     echogate.TurnEventType
		ok       bool
	}{
		{StateIdle, StateProcessing, echogate.TurnStarted, true},
		{StateToolExec, StateProcessing, "", false},
		{StateWaitingApproval, StateToolExec, echogate.TurnStarted, true},   // approved
		{StateWaitingApproval, StateProcessing, echogate.TurnStarted, true}, // denied
		{StateClarifying, StateProcessing, echogate.TurnStarted, true},      // answered
		{StateWaitingApproval, StateStopped, "", false},
		{StateProcessing, StateWaitingApproval, echogate.TurnApprovalRequest, true},
		{StateToolExec, StateClarifying, echogate.TurnAsk, true},
		{StateResponse, StateFailed, echogate.TurnError, true},
		{StateResponse, StateDone, "", false},
	} {
		if got, ok := turnEventOf(tt.from, tt.to); got != tt.want || ok != tt.ok {
			t.Errorf("turnEventOf(%s, %s) = %q, %v; want %q, %v", tt.from, tt.to, got, ok, tt.want, tt.ok)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for s, want := range map[State]echogate.TurnStatus{
		StateDone: echogate.TurnDoneSt, StateStopped: echogate.TurnAborted, StateFailed: echogate.TurnFailed,
		StateWaitingApproval: echogate.TurnPaused, StateClarifying: echogate.TurnPaused, StateProcessing: echogate.TurnRunning,
	} {
		if got := statusOf(s); got != want {
			t.Errorf("statusOf(%s) = %s, want %s", s, got, want)
		}
	}
}
