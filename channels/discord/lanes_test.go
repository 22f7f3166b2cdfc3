package discord

import (
	"strconv"
	"testing"
)

// lanes.offer: a message that needs a read starts its channel's lane; later messages of that
// channel join it (read or not) up to laneQueue; past maxLanes a message goes without a lane;
// a finished lane frees its slot.
func TestLanesOffer(t *testing.T) {
	var l lanes
	job := laneJob{}
	steps := []struct {
		name      string
		ch        string
		needsRead bool
		want      offer
	}{
		{"no read, no lane", "a", false, offerNone},
		{"a read starts a lane", "a", true, offerStarted},
		{"same channel, no read: joins", "a", false, offerJoined},
		{"same channel, read: joins", "a", true, offerJoined},
	}
	for _, s := range steps {
		if got := l.offer(s.ch, job, s.needsRead); got != s.want {
			t.Fatalf("%s: offer(%s, read=%v) = %d, want %d", s.name, s.ch, s.needsRead, got, s.want)
		}
	}
	for i := 3; i < laneQueue; i++ {
		if got := l.offer("a", job, false); got != offerJoined {
			t.Fatalf("offer #%d to lane a = %d, want joined", i, got)
		}
	}
	if got := l.offer("a", job, false); got != offerFull {
		t.Errorf("offer past laneQueue = %d, want full", got)
	}
	for i := 1; i < maxLanes; i++ {
		if got := l.offer("c"+strconv.Itoa(i), job, true); got != offerStarted {
			t.Fatalf("lane %d = %d, want started", i, got)
		}
	}
	if got := l.offer("z", job, true); got != offerNoLane {
		t.Errorf("offer past maxLanes = %d, want no lane", got)
	}
	for {
		if _, ok := l.next("c1"); !ok {
			break
		}
		l.done("c1")
	}
	if got := l.offer("z", job, true); got != offerStarted {
		t.Errorf("offer after a lane ended = %d, want started", got)
	}
}
