package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Spec is when a job runs: exactly one of Cron, Every and At is set.
type Spec struct {
	// Cron is a five-field expression (minute hour day-of-month month day-of-week, names such as
	// MON-FRI allowed) or a descriptor (@daily, @hourly, …), read in Timezone.
	Cron string
	// Timezone is an IANA name for Cron; empty means UTC. Every and At ignore it.
	Timezone string
	// Every runs the job at a fixed interval from its first slot (absolute time: DST does not
	// stretch it).
	Every time.Duration
	// At runs the job once, at that instant.
	At time.Time
}

// Limits are the scheduler's bounds on jobs (config `scheduler:`). The zero value means the
// defaults.
type Limits struct {
	MinInterval time.Duration // shortest period accepted; default DefaultMinInterval
	MaxPerUser  int           // jobs one user may own through the `schedule` tool; default DefaultMaxPerUser
}

// Defaults of Limits.
const (
	DefaultMinInterval = time.Minute
	DefaultMaxPerUser  = 20
)

func (l Limits) withDefaults() Limits {
	if l.MinInterval <= 0 {
		l.MinInterval = DefaultMinInterval
	}
	if l.MaxPerUser <= 0 {
		l.MaxPerUser = DefaultMaxPerUser
	}
	return l
}

// parser reads the standard five fields plus descriptors (@daily); @every is refused by
// Compile (use `every:`), as is a TZ= prefix (use `timezone:`).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Compile validates s against lim and returns its schedule. Errors wrap ErrInvalid and name
// the key (`cron`, `timezone`, `every`, `at`) and how to fix it. now is the reference for `at`
// (a one-shot in the past is refused).
func Compile(s Spec, lim Limits, now time.Time) (Schedule, error) {
	lim = lim.withDefaults()
	set := 0
	for _, b := range []bool{s.Cron != "", s.Every != 0, !s.At.IsZero()} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("%w: set exactly one of cron, every and at (got %d)", ErrInvalid, set)
	}
	if s.Timezone != "" && s.Cron == "" {
		return nil, fmt.Errorf("%w: timezone %q: only cron reads a time zone; every is absolute and at carries its own offset", ErrInvalid, s.Timezone)
	}
	switch {
	case s.Every != 0:
		if s.Every < lim.MinInterval {
			return nil, fmt.Errorf("%w: every %s: below scheduler.min_interval %s; use a longer interval", ErrInvalid, s.Every, lim.MinInterval)
		}
		if s.Every%time.Second != 0 {
			return nil, fmt.Errorf("%w: every %s: use whole seconds", ErrInvalid, s.Every)
		}
		return everySched{s.Every}, nil
	case !s.At.IsZero():
		if !s.At.After(now) {
			return nil, fmt.Errorf("%w: at %s: in the past (now %s); give a future time", ErrInvalid, s.At.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		return atSched{s.At.Truncate(time.Second)}, nil
	}
	return compileCron(s, lim, true)
}

func compileCron(s Spec, lim Limits, checkGap bool) (Schedule, error) {
	expr := strings.TrimSpace(s.Cron)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("%w: cron %q: put the time zone in `timezone:`, not in the expression", ErrInvalid, s.Cron)
	}
	if strings.HasPrefix(expr, "@every") {
		return nil, fmt.Errorf("%w: cron %q: use `every: %s` instead", ErrInvalid, s.Cron, strings.TrimSpace(strings.TrimPrefix(expr, "@every")))
	}
	loc := time.UTC
	if s.Timezone != "" {
		l, err := time.LoadLocation(s.Timezone)
		if err != nil || strings.EqualFold(s.Timezone, "local") {
			return nil, fmt.Errorf("%w: timezone %q: not an IANA zone name; use one such as Europe/Berlin or America/New_York", ErrInvalid, s.Timezone)
		}
		loc = l
	}
	p, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: cron %q: %v; use five fields: minute hour day-of-month month day-of-week, e.g. \"0 9 * * MON-FRI\"", ErrInvalid, s.Cron, err)
	}
	spec, ok := p.(*cron.SpecSchedule)
	if !ok || spec.Second != 1 {
		return nil, fmt.Errorf("%w: cron %q: not a five-field schedule", ErrInvalid, s.Cron)
	}
	c := &cronSched{spec: spec, loc: loc}
	if !checkGap {
		return c, nil
	}
	if gap, ok := c.minGap(); !ok {
		return nil, fmt.Errorf("%w: cron %q: never fires (no day matches); check day-of-month and month", ErrInvalid, s.Cron)
	} else if gap < lim.MinInterval {
		return nil, fmt.Errorf("%w: cron %q: fires %s apart at its most frequent, below scheduler.min_interval %s; use a sparser expression", ErrInvalid, s.Cron, gap, lim.MinInterval)
	}
	return c, nil
}

// ParseWhen reads a one-shot time as the `schedule` tool takes it: RFC 3339
// ("2026-12-08T10:00:00+01:00") or "in DURATION" ("in 10m", "in 2h30m") from now.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "in "); ok {
		d, err := time.ParseDuration(strings.ReplaceAll(strings.TrimSpace(rest), " ", ""))
		if err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("%w: at %q: give a positive Go duration after \"in\", such as \"in 10m\" or \"in 2h30m\"", ErrInvalid, s)
		}
		return now.Add(d).Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: at %q: use RFC 3339 with an offset (2026-12-08T10:00:00+01:00) or \"in 10m\"", ErrInvalid, s)
	}
	return t, nil
}

// Key is the spec's canonical form: two specs with one key fire at the same instants. A store
// keeps a job's cursor across a config reload only while its key is unchanged.
func (s Spec) Key() string {
	switch {
	case s.Cron != "":
		tz := s.Timezone
		if tz == "" {
			tz = "UTC"
		}
		return "cron:" + strings.Join(strings.Fields(s.Cron), " ") + "@" + tz
	case s.Every != 0:
		return "every:" + s.Every.String()
	case !s.At.IsZero():
		return "at:" + s.At.UTC().Format(time.RFC3339)
	}
	return ""
}

// Of returns the schedule of a stored job's spec, without the limits and the "not in the
// past" rule Compile applies to new jobs (a stored one-shot may be due or done).
func Of(s Spec) (Schedule, error) {
	switch {
	case s.Cron != "" && s.Every == 0 && s.At.IsZero():
		return compileCron(s, Limits{}, false)
	case !s.At.IsZero() && s.Cron == "" && s.Every == 0:
		return atSched{s.At.Truncate(time.Second)}, nil
	}
	return Compile(s, Limits{MinInterval: time.Nanosecond}, time.Time{})
}
