package schedule

import (
	"fmt"
	"testing"
	"time"
)

func TestDecideCatchUp(t *testing.T) {
	base := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	every30 := compile(t, Spec{Every: 30 * time.Minute})
	daily9 := compile(t, Spec{Cron: "0 9 * * *"})
	at := atSched{base}
	once := CatchUp{Policy: CatchUpOnce, MaxLateness: time.Hour}
	skip := CatchUp{Policy: CatchUpSkip}
	for name, tt := range map[string]struct {
		sch    Schedule
		cursor time.Time
		now    time.Time
		cu     CatchUp
		want   Decision
	}{
		"on time":                      {every30, base, base.Add(2 * time.Second), once, Decision{Run: true, Slot: base, Next: base.Add(30 * time.Minute)}},
		"not due yet":                  {every30, base, base.Add(-time.Second), once, Decision{Next: base}},
		"once: latest of 10 missed":    {every30, base, base.Add(5*time.Hour + 10*time.Minute), once, Decision{Run: true, Slot: base.Add(5 * time.Hour), Next: base.Add(5*time.Hour + 30*time.Minute)}},
		"once: latest too old":         {daily9, base, base.Add(3 * time.Hour), once, Decision{Next: base.Add(24 * time.Hour)}},
		"once: exactly max_lateness":   {daily9, base, base.Add(time.Hour), once, Decision{Run: true, Slot: base, Next: base.Add(24 * time.Hour)}},
		"skip: missed slots all skip":  {every30, base, base.Add(5*time.Hour + 10*time.Minute), skip, Decision{Next: base.Add(5*time.Hour + 30*time.Minute)}},
		"skip: a slot due now runs":    {every30, base, base.Add(5*time.Hour + 20*time.Second), skip, Decision{Run: true, Slot: base.Add(5 * time.Hour), Next: base.Add(5*time.Hour + 30*time.Minute)}},
		"at: on time, then done":       {at, base, base.Add(time.Second), once, Decision{Run: true, Slot: base, Done: true}},
		"at: missed past max_lateness": {at, base, base.Add(2 * time.Hour), once, Decision{Done: true}},
		"at: missed within lateness":   {at, base, base.Add(30 * time.Minute), once, Decision{Run: true, Slot: base, Done: true}},
	} {
		got := Decide(tt.sch, tt.cursor, tt.now, tt.cu, time.Minute)
		if got != tt.want {
			t.Errorf("%s: Decide(cursor %v, now %v) = %+v, want %+v", name, tt.cursor, tt.now, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{-1: 0, 0: 0, 1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 7: time.Hour, 1000: time.Hour} {
		if got := Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestCheckJob(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	ok := Job{ID: "j1", Owner: "slack:T1:U1", Deliver: "slack:C1", Prompt: "p", Spec: Spec{Every: time.Hour}}
	j, err := CheckJob(ok, Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(time.Hour); !j.Next.Equal(want) || j.CatchUp.Policy != CatchUpOnce || j.CatchUp.MaxLateness != time.Hour || j.Session != "isolated" {
		t.Errorf("CheckJob defaults = next %v catch-up %+v session %q; want next %v, once/1h, isolated", j.Next, j.CatchUp, j.Session, want)
	}
	for name, mut := range map[string]func(*Job){
		"no prompt":    func(j *Job) { j.Prompt = "" },
		"no deliver":   func(j *Job) { j.Deliver = "" },
		"no owner":     func(j *Job) { j.Owner = "" },
		"bad catch_up": func(j *Job) { j.CatchUp.Policy = "twice" },
		"bad session":  func(j *Job) { j.Session = "forever" },
		"neg budget":   func(j *Job) { j.BudgetUSD = -1 },
		"neg failures": func(j *Job) { j.MaxFailures = -1 },
	} {
		j := ok
		mut(&j)
		if _, err := CheckJob(j, Limits{}, now); err == nil {
			t.Errorf("CheckJob(%s) = nil error, want one", name)
		}
	}
}

func TestEventKeyIsPerSlot(t *testing.T) {
	a := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	keys := map[string]bool{}
	for _, k := range []string{EventKey("j", a), EventKey("j", a.Add(time.Second)), EventKey("k", a)} {
		keys[k] = true
	}
	if len(keys) != 3 || EventKey("j", a) != EventKey("j", a.In(time.FixedZone("x", 3600))) {
		t.Errorf("EventKey is not one key per (job, instant): %v", keys)
	}
	_ = fmt.Sprint
}
