package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule yields a job's slots.
type Schedule interface {
	// Next returns the first slot strictly after t (in UTC), or false when there is none (a one-shot
	// whose time has passed, a cron expression with no matching day in five years).
	Next(t time.Time) (time.Time, bool)
}

// everySched fires at the multiples of d since the Unix epoch (every: 30m → :00 and :30),
// so every replica and restart computes the same slots without a stored anchor.
type everySched struct{ d time.Duration }

func (e everySched) Next(t time.Time) (time.Time, bool) {
	step := int64(e.d / time.Second)
	u := t.Unix()
	k := u / step
	if u < 0 && u%step != 0 {
		k-- // floor for instants before 1970
	}
	return time.Unix((k+1)*step, 0).UTC(), true
}

// atSched fires once.
type atSched struct{ at time.Time }

func (a atSched) Next(t time.Time) (time.Time, bool) {
	if a.at.After(t) {
		return a.at.UTC(), true
	}
	return time.Time{}, false
}

// cronSched finds slots in loc, the way Vixie cron treats DST. An expression with a fixed
// hour walks wall-clock minutes, each mapped to one instant: the first instant showing that
// wall time (a time repeated when clocks fall back runs once, in its first pass), or, for a
// time inside a spring-forward gap, the instant the gap ends; slots that map to one instant
// run once. An expression whose hour is * (runs every hour) walks real minutes instead: it
// runs in both passes of a repeated hour and skips none, so an hourly check never goes silent
// for an hour.
type cronSched struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

// starBit marks a field written as * (robfig/cron's convention): day-of-month and
// day-of-week then combine with AND, else with OR, as in Vixie cron.
const starBit = 1 << 63

// searchDays bounds the walk: an expression that matches no day in five years never fires.
const searchDays = 5*366 + 1

func (c *cronSched) Next(t time.Time) (time.Time, bool) {
	if c.spec.Hour&starBit != 0 {
		return c.nextReal(t)
	}
	l := t.In(c.loc)
	day := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC) // a civil date
	startH, startM := l.Hour(), l.Minute()
	for range searchDays {
		if c.dayMatches(day) {
			for h := startH; h < 24; h++ {
				if c.spec.Hour&(1<<uint(h)) == 0 {
					continue
				}
				m0 := 0
				if h == startH {
					m0 = startM
				}
				for m := m0; m < 60; m++ {
					if c.spec.Minute&(1<<uint(m)) == 0 {
						continue
					}
					if at := firstInstant(day, h, m, c.loc); at.After(t) {
						return at.UTC(), true
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
		startH, startM = 0, 0
	}
	return time.Time{}, false
}

// nextReal walks real minutes after t, skipping days that do not match.
func (c *cronSched) nextReal(t time.Time) (time.Time, bool) {
	u := t.Truncate(time.Minute).Add(time.Minute)
	for limit := t.AddDate(0, 0, searchDays); u.Before(limit); {
		l := u.In(c.loc)
		if !c.dayMatches(time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC)) {
			next := time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, c.loc)
			u = u.Add(time.Minute)
			if n := next.Truncate(time.Minute); n.After(u) {
				u = n
			}
			continue
		}
		if c.spec.Hour&(1<<uint(l.Hour())) != 0 && c.spec.Minute&(1<<uint(l.Minute())) != 0 {
			return u.UTC(), true
		}
		u = u.Add(time.Minute)
	}
	return time.Time{}, false
}

func (c *cronSched) dayMatches(day time.Time) bool {
	s := c.spec
	if s.Month&(1<<uint(day.Month())) == 0 {
		return false
	}
	dom := s.Dom&(1<<uint(day.Day())) != 0
	dow := s.Dow&(1<<uint(day.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// firstInstant is the first instant whose wall clock in loc reads day h:m, or the end of the
// spring-forward gap that skips it.
func firstInstant(day time.Time, h, m int, loc *time.Location) time.Time {
	t := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc)
	if t.Hour() != h || t.Minute() != m || t.Day() != day.Day() {
		// In a gap: Go normalized it into one of the zones around the gap.
		start, end := t.ZoneBounds()
		if wallAfter(t, day, h, m) {
			return start // normalized forward: the gap ended where t's zone starts
		}
		return end // normalized backward: the gap starts where t's zone ends
	}
	// Repeated (clocks fell back): the same wall time also shows in the zone before t's.
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, off := t.Zone()
	_, prevOff := start.Add(-time.Second).Zone()
	if prevOff > off {
		if alt := t.Add(-time.Duration(prevOff-off) * time.Second); alt.Before(start) {
			if a := alt.In(loc); a.Hour() == h && a.Minute() == m && a.Day() == day.Day() {
				return alt
			}
		}
	}
	return t
}

// wallAfter reports whether t's wall clock is later than day h:m.
func wallAfter(t, day time.Time, h, m int) bool {
	y, mo, d := t.Date()
	tw := time.Date(y, mo, d, t.Hour(), t.Minute(), 0, 0, time.UTC)
	return tw.After(time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, time.UTC))
}

// minGap is the shortest time between two consecutive slots over the next slots from a fixed
// reference (enough to cover the busiest day); false if it never fires.
func (c *cronSched) minGap() (time.Duration, bool) {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev, ok := c.Next(t)
	if !ok {
		return 0, false
	}
	gap, first := time.Duration(1<<63-1), prev
	for range 1500 {
		n, ok := c.Next(prev)
		if !ok || n.Sub(first) > 400*24*time.Hour {
			break
		}
		gap = min(gap, n.Sub(prev))
		prev = n
	}
	return gap, true
}
