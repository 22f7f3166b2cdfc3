package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func compile(t *testing.T, s Spec) Schedule {
	t.Helper()
	sch, err := Compile(s, Limits{}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("Compile(%+v): %v", s, err)
	}
	return sch
}

// slots lists the slots after from up to and including to.
func slots(sch Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for t := from; ; {
		n, ok := sch.Next(t)
		if !ok || n.After(to) {
			return out
		}
		out = append(out, n)
		t = n
	}
}

func TestCronAcrossDST(t *testing.T) {
	ber, ny := mustLoc(t, "Europe/Berlin"), mustLoc(t, "America/New_York")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	for name, tt := range map[string]struct {
		spec     Spec
		from, to time.Time
		want     []string // UTC instants
	}{
		"Berlin spring-forward: 02:30 is in the gap, runs once at 03:00 CEST": {
			Spec{Cron: "30 2 * * *", Timezone: "Europe/Berlin"},
			time.Date(2026, 3, 28, 12, 0, 0, 0, ber), time.Date(2026, 3, 30, 12, 0, 0, 0, ber),
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
		},
		"Berlin spring-forward: every 15 minutes of the gap hour merge into one run": {
			Spec{Cron: "*/15 2 * * *", Timezone: "Europe/Berlin"},
			time.Date(2026, 3, 29, 0, 0, 0, 0, ber), time.Date(2026, 3, 29, 12, 0, 0, 0, ber),
			[]string{"2026-03-29T01:00:00Z"},
		},
		"Berlin fall-back: 02:30 happens twice, runs once (the first)": {
			Spec{Cron: "30 2 * * *", Timezone: "Europe/Berlin"},
			time.Date(2026, 10, 24, 12, 0, 0, 0, ber), time.Date(2026, 10, 26, 12, 0, 0, 0, ber),
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		},
		"Berlin fall-back: hourly (hour *) runs every real hour, both passes of the repeated hour": {
			Spec{Cron: "0 * * * *", Timezone: "Europe/Berlin"},
			time.Date(2026, 10, 25, 1, 30, 0, 0, ber), time.Date(2026, 10, 25, 4, 0, 0, 0, ber),
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"},
		},
		"New York spring-forward: every 30 min (hour *) loses no real time": {
			Spec{Cron: "*/30 * * * *", Timezone: "America/New_York"},
			time.Date(2026, 3, 8, 1, 0, 0, 0, ny), time.Date(2026, 3, 8, 3, 30, 0, 0, ny),
			[]string{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"},
		},
		"Berlin fall-back: 02:00-02:59 every 10 min (fixed hour) runs in the first pass only": {
			Spec{Cron: "*/10 2 * * *", Timezone: "Europe/Berlin"},
			time.Date(2026, 10, 25, 0, 0, 0, 0, ber), time.Date(2026, 10, 25, 12, 0, 0, 0, ber),
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:10:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:30:00Z", "2026-10-25T00:40:00Z", "2026-10-25T00:50:00Z"},
		},
		"New York spring-forward: 02:00 is in the gap, runs at 03:00 EDT": {
			Spec{Cron: "0 2 * * *", Timezone: "America/New_York"},
			time.Date(2026, 3, 7, 12, 0, 0, 0, ny), time.Date(2026, 3, 9, 12, 0, 0, 0, ny),
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"},
		},
		"New York fall-back: 01:30 happens twice, runs once": {
			Spec{Cron: "30 1 * * *", Timezone: "America/New_York"},
			time.Date(2026, 10, 31, 12, 0, 0, 0, ny), time.Date(2026, 11, 2, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		},
		"weekday digest at 9 Berlin skips the weekend": {
			Spec{Cron: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"},
			time.Date(2026, 12, 4, 10, 0, 0, 0, ber), time.Date(2026, 12, 8, 10, 0, 0, 0, ber), // Fri 10:00 → Tue
			[]string{"2026-12-07T08:00:00Z", "2026-12-08T08:00:00Z"},
		},
		"day-of-month and day-of-week both set: either matches": {
			Spec{Cron: "0 0 1 * MON"},
			time.Date(2026, 5, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 9, 0, 0, 0, 0, time.UTC),
			[]string{"2026-06-01T00:00:00Z", "2026-06-08T00:00:00Z"},
		},
		"every 30m is aligned to :00 and :30, DST does not stretch it": {
			Spec{Every: 30 * time.Minute},
			time.Date(2026, 3, 29, 0, 40, 0, 0, time.UTC), time.Date(2026, 3, 29, 2, 0, 0, 0, time.UTC),
			[]string{"2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z"},
		},
		"at runs once": {
			Spec{At: time.Date(2026, 12, 24, 9, 0, 0, 0, ber)},
			time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2026-12-24T08:00:00Z"},
		},
	} {
		got := slots(compile(t, tt.spec), tt.from, tt.to)
		var gs []string
		for _, g := range got {
			gs = append(gs, g.UTC().Format(time.RFC3339))
		}
		if strings.Join(gs, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: slots = %v, want %v", name, gs, tt.want)
		}
		for _, w := range tt.want {
			_ = utc(w)
		}
	}
}

// TestCronFromInsideRepeatedHour: a cursor computed during the second pass of a repeated hour
// does not run that hour's slots again.
func TestCronFromInsideRepeatedHour(t *testing.T) {
	sch := compile(t, Spec{Cron: "*/10 2,3 * * *", Timezone: "Europe/Berlin"})
	second := time.Date(2026, 10, 25, 1, 5, 0, 0, time.UTC) // 02:05 CET, the second 02:05
	got, _ := sch.Next(second)
	if want := time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC); !got.Equal(want) { // 03:00 CET
		t.Errorf("Next(%v) = %v, want %v", second, got.UTC(), want)
	}
}

func TestCompileRejects(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for name, tt := range map[string]struct {
		spec Spec
		lim  Limits
		want string // in the message
	}{
		"nothing":              {Spec{}, Limits{}, "exactly one of cron, every and at"},
		"two":                  {Spec{Cron: "0 9 * * *", Every: time.Hour}, Limits{}, "exactly one"},
		"bad cron":             {Spec{Cron: "0 9 * *"}, Limits{}, "five fields"},
		"bad field":            {Spec{Cron: "61 9 * * *"}, Limits{}, "cron \"61 9 * * *\""},
		"cron too frequent":    {Spec{Cron: "*/2 * * * *"}, Limits{MinInterval: 5 * time.Minute}, "below scheduler.min_interval 5m0s"},
		"every too short":      {Spec{Every: 30 * time.Second}, Limits{}, "every 30s: below scheduler.min_interval 1m0s"},
		"every fractional":     {Spec{Every: 90*time.Second + 1}, Limits{}, "whole seconds"},
		"at in the past":       {Spec{At: now.Add(-time.Minute)}, Limits{}, "in the past"},
		"bad zone":             {Spec{Cron: "0 9 * * *", Timezone: "Mars/Olympus"}, Limits{}, "timezone \"Mars/Olympus\": not an IANA zone"},
		"zone without cron":    {Spec{Every: time.Hour, Timezone: "Europe/Berlin"}, Limits{}, "only cron reads a time zone"},
		"TZ in expression":     {Spec{Cron: "TZ=Europe/Berlin 0 9 * * *"}, Limits{}, "`timezone:`"},
		"@every":               {Spec{Cron: "@every 5m"}, Limits{}, "use `every: 5m`"},
		"never fires (Feb 30)": {Spec{Cron: "0 0 30 2 *"}, Limits{}, "never fires"},
	} {
		_, err := Compile(tt.spec, tt.lim, now)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Compile(%+v) = %v, want ErrInvalid containing %q", name, tt.spec, err, tt.want)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 500, time.UTC)
	for in, want := range map[string]string{
		"in 10m":                    "2026-12-07T10:10:00Z",
		"in 2h30m":                  "2026-12-07T12:30:00Z",
		"2026-12-08T10:00:00+01:00": "2026-12-08T09:00:00Z",
	} {
		got, err := ParseWhen(in, now)
		if err != nil || got.UTC().Format(time.RFC3339) != want {
			t.Errorf("ParseWhen(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"in -5m", "in soon", "tomorrow", "2026-12-08 10:00"} {
		if _, err := ParseWhen(in, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseWhen(%q) error = %v, want ErrInvalid", in, err)
		}
	}
}
