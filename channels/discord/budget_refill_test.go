package discord

import (
	"testing"
	"time"
)

// TestBudgetRefillsOneTokenPerPeriod: after exactly one refill period a drained bucket has a
// token again, also for periods whose rate (rate.Every) is not exact in float64 (13ms, 21ms).
func TestBudgetRefillsOneTokenPerPeriod(t *testing.T) {
	for _, refill := range []time.Duration{13 * time.Millisecond, 21 * time.Millisecond, 120 * time.Millisecond, time.Second} {
		clk := newFakeClock()
		b := newBudget(clk, 1, refill)
		if !b.tryTake("c") {
			t.Fatalf("refill %s: tryTake on a full bucket = false, want true", refill)
		}
		if b.tryTake("c") {
			t.Fatalf("refill %s: tryTake on a drained bucket = true, want false", refill)
		}
		clk.Advance(refill - time.Nanosecond)
		if b.tryTake("c") {
			t.Fatalf("refill %s: tryTake a nanosecond before the refill = true, want false", refill)
		}
		clk.Advance(time.Nanosecond)
		if !b.tryTake("c") {
			t.Errorf("refill %s: tryTake after one refill period = false, want true", refill)
		}
		clk.Advance(refill)
		if err := b.wait(t.Context(), "c"); err != nil {
			t.Errorf("refill %s: wait after one refill period = %v, want a token at once", refill, err)
		}
	}
}
