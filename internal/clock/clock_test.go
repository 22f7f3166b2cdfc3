package clock

import (
	"testing"
	"time"
)

func TestSystemIsTheWallClock(t *testing.T) {
	var c Clock = System{}
	before := time.Now()
	got := c.Now()
	if got.Before(before) || got.Sub(before) > time.Minute {
		t.Errorf("System.Now() = %v, want about %v", got, before)
	}
	select {
	case <-c.After(0):
	case <-time.After(5 * time.Second):
		t.Error("System.After(0) did not fire within 5s")
	}
}
