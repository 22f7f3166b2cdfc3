package breaker

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var errBoom = errors.New("boom")

// harness is a breaker on a fake clock that records its state changes.
type harness struct {
	t       *testing.T
	clock   *fakeClock
	b       *Breaker
	mu      sync.Mutex
	changes []string
}

func newHarness(t *testing.T, s Settings) *harness {
	h := &harness{t: t, clock: newFakeClock()}
	s.Name, s.Now = "test", h.clock.Now
	s.OnState = func(name string, from, to State) {
		h.mu.Lock()
		h.changes = append(h.changes, from.String()+"→"+to.String())
		h.mu.Unlock()
	}
	h.b = New(s)
	return h
}

// call runs one call with outcome err and returns Allow's error.
func (h *harness) call(err error) error {
	done, aerr := h.b.Allow()
	if aerr != nil {
		return aerr
	}
	done(err)
	return nil
}

func (h *harness) wantState(step string, want State) {
	h.t.Helper()
	if got := h.b.State(); got != want {
		h.t.Fatalf("%s: State() = %s, want %s", step, got, want)
	}
}

func (h *harness) history() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.changes, ", ")
}

func TestBreakerOpensHalfOpensAndClosesOnTheInjectedClock(t *testing.T) {
	h := newHarness(t, Settings{Failures: 3, CoolDown: time.Minute})
	for i := range 3 {
		h.wantState(fmt.Sprintf("before failure %d", i+1), StateClosed)
		if err := h.call(errBoom); err != nil {
			t.Fatalf("call %d: Allow() = %v, want nil", i+1, err)
		}
	}
	h.wantState("after 3 failures", StateOpen)
	if got := h.b.OpenedAt(); !got.Equal(h.clock.Now()) {
		t.Errorf("OpenedAt() = %v, want %v", got, h.clock.Now())
	}
	h.clock.Advance(time.Minute - time.Nanosecond)
	if err := h.call(nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("Allow() just before the cool-down ends = %v, want ErrOpen", err)
	}
	h.wantState("just before the cool-down ends", StateOpen)
	h.clock.Advance(time.Nanosecond)
	h.wantState("when the cool-down ends", StateHalfOpen)
	probe, err := h.b.Allow()
	if err != nil {
		t.Fatalf("probe: Allow() = %v, want nil", err)
	}
	if err := h.call(nil); !errors.Is(err, ErrTooManyRequests) {
		t.Fatalf("second call while the probe is out: Allow() = %v, want ErrTooManyRequests", err)
	}
	probe(nil)
	h.wantState("after a good probe", StateClosed)
	if got, want := h.history(), "closed→open, open→half-open, half-open→closed"; got != want {
		t.Errorf("state changes = %q, want %q", got, want)
	}
}

func TestBreakerFailedProbeReopensForAnotherCoolDown(t *testing.T) {
	h := newHarness(t, Settings{Failures: 1, CoolDown: 10 * time.Second})
	h.call(errBoom)
	h.clock.Advance(10 * time.Second)
	if err := h.call(errBoom); err != nil {
		t.Fatalf("probe: Allow() = %v, want nil", err)
	}
	h.wantState("after a failed probe", StateOpen)
	h.clock.Advance(9 * time.Second)
	if err := h.call(nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("Allow() 9s after the failed probe = %v, want ErrOpen", err)
	}
	h.clock.Advance(time.Second)
	if err := h.call(nil); err != nil {
		t.Fatalf("Allow() 10s after the failed probe = %v, want nil", err)
	}
	h.wantState("after a good probe", StateClosed)
	if got, want := h.history(), "closed→open, open→half-open, half-open→open, open→half-open, half-open→closed"; got != want {
		t.Errorf("state changes = %q, want %q", got, want)
	}
}

func TestBreakerCounts(t *testing.T) {
	excluded := errors.New("not counted")
	tests := []struct {
		name     string
		s        Settings
		outcomes []error
		advance  time.Duration // between outcomes
		want     State
	}{
		{"consecutive failures open", Settings{Failures: 2}, []error{errBoom, errBoom}, 0, StateOpen},
		{"a success resets the run", Settings{Failures: 2}, []error{errBoom, nil, errBoom}, 0, StateClosed},
		{"excluded outcomes do not count", Settings{Failures: 2, IsExcluded: func(err error) bool { return errors.Is(err, excluded) }},
			[]error{errBoom, excluded, excluded}, 0, StateClosed},
		{"IsSuccessful decides", Settings{Failures: 1, IsSuccessful: func(err error) bool { return err == nil || errors.Is(err, excluded) }},
			[]error{excluded, excluded}, 0, StateClosed},
		{"window: failures with successes between open", Settings{Failures: 3, Window: time.Minute},
			[]error{errBoom, nil, errBoom, nil, errBoom}, time.Second, StateOpen},
		{"window: old failures drop out", Settings{Failures: 3, Window: time.Minute},
			[]error{errBoom, errBoom, errBoom}, 31 * time.Second, StateClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.s)
			for i, o := range tt.outcomes {
				if i > 0 {
					h.clock.Advance(tt.advance)
				}
				if err := h.call(o); err != nil {
					t.Fatalf("outcome %d: Allow() = %v, want nil", i, err)
				}
			}
			h.wantState(fmt.Sprint(tt.outcomes), tt.want)
		})
	}
}

func TestBreakerDoCountsAPanicAsAFailure(t *testing.T) {
	h := newHarness(t, Settings{Failures: 1})
	func() {
		defer func() {
			if v := recover(); v != "tool exploded" {
				t.Errorf("recover() = %v, want the re-raised panic", v)
			}
		}()
		Do(h.b, func() (int, error) { panic("tool exploded") })
	}()
	h.wantState("after a panic", StateOpen)
	if _, err := Do(h.b, func() (int, error) { return 1, nil }); !errors.Is(err, ErrOpen) {
		t.Errorf("Do while open = %v, want ErrOpen", err)
	}
}

func TestBreakerConcurrentUse(t *testing.T) {
	h := newHarness(t, Settings{Failures: 2, CoolDown: time.Second})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				var out error
				if (g+i)%3 == 0 {
					out = errBoom
				}
				h.call(out)
				h.b.State()
				if i%10 == 0 {
					h.clock.Advance(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	// Every change starts where the previous one ended.
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := "closed"
	for i, c := range h.changes {
		from, to, _ := strings.Cut(c, "→")
		if from != prev {
			t.Fatalf("change %d = %s, want one from %s (history %v)", i, c, prev, h.changes)
		}
		prev = to
	}
}
