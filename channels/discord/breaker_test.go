package discord

import (
	"errors"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/breaker"
)

// TestReconnectBreakerRunsOnConfigClock: BreakerFailures failures within BreakerWindow open the
// reconnect breaker, which stays open for BreakerCooldown on Config.Clock, not the wall clock.
func TestReconnectBreakerRunsOnConfigClock(t *testing.T) {
	clk := newFakeClock()
	c, err := New(Config{Token: "t", Clock: clk, BreakerFailures: 3, BreakerWindow: time.Minute, BreakerCooldown: 10 * time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fail := func(step string) {
		t.Helper()
		done, err := c.breaker.Allow()
		if err != nil {
			t.Fatalf("%s: Allow() = %v, want nil", step, err)
		}
		done(errors.New("connection dropped"))
	}
	fail("failure 1")
	clk.Advance(61 * time.Second) // the first failure leaves the window
	fail("failure 2")
	fail("failure 3")
	if got := c.breaker.State(); got != breaker.StateClosed {
		t.Fatalf("State() with 2 failures in the window = %s, want closed", got)
	}
	fail("failure 4")
	if got := c.breaker.State(); got != breaker.StateOpen {
		t.Fatalf("State() with 3 failures in the window = %s, want open", got)
	}
	clk.Advance(10*time.Minute - time.Second)
	if _, err := c.breaker.Allow(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Allow() a second before the cool-down ends = %v, want ErrOpen", err)
	}
	clk.Advance(time.Second)
	done, err := c.breaker.Allow()
	if err != nil {
		t.Fatalf("Allow() after the cool-down = %v, want a probe", err)
	}
	done(nil)
	if got := c.breaker.State(); got != breaker.StateClosed {
		t.Errorf("State() after a good probe = %s, want closed", got)
	}
}
