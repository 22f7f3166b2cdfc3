package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/pipeline"
)

// A console decision is the console's own (an IsSelf event), with the operator's name when
// given; it never acts as a platform user or a listed approver.
func TestConsoleDecider(t *testing.T) {
	for user, want := range map[string]string{
		"":                      "console",
		"  ":                    "console",
		"ops.lead":              "console:ops.lead",
		"ana@example":           "console:ana@example",
		"slack:U9":              "",
		"U9 ":                   "console:U9",
		"two words":             "",
		"console-admin:x":       "",
		strings.Repeat("a", 65): "",
	} {
		a, err := consoleDecider(user)
		switch {
		case want == "" && (err == nil || !strings.Contains(err.Error(), "decides as itself")):
			t.Errorf("consoleDecider(%q) = %+v, %v; want an error saying the console decides as itself", user, a, err)
		case want != "" && (err != nil || a.ID != want || !a.IsSelf || !strings.Contains(a.Name, "echogate console")):
			t.Errorf("consoleDecider(%q) = %+v, %v; want the gateway's own actor %s named as the console", user, a, err, want)
		}
	}
}

// summer is a ledger that answers SumUsage from fixed records.
type summer struct {
	recs  []echogate.UsageRecord
	calls int
	fail  int // fail the n-th call (1-based); 0 never
}

func (s *summer) SumUsage(_ context.Context, f echogate.UsageFilter) (echogate.Usage, error) {
	s.calls++
	if s.calls == s.fail {
		return echogate.Usage{}, errors.New("disk on fire")
	}
	var u echogate.Usage
	for _, r := range s.recs {
		if r.At.Before(f.Since) || !f.Until.IsZero() && !r.At.Before(f.Until) || f.Session != "" && r.Session != f.Session {
			continue
		}
		u = addUsage(u, r.Usage)
	}
	return u, nil
}

func TestSeriesOf(t *testing.T) {
	now := time.Date(2026, 3, 2, 15, 0, 0, 0, time.FixedZone("CET", 3600))
	rec := func(at string, cost float64, in int64) echogate.UsageRecord {
		ts, err := time.Parse(time.RFC3339, at)
		if err != nil {
			t.Fatal(err)
		}
		return echogate.UsageRecord{Session: "web:a", At: ts, Usage: echogate.Usage{CostUSD: cost, InputTokens: in, OutputTokens: 1, CachedInputTokens: in / 5}}
	}
	s := &summer{recs: []echogate.UsageRecord{
		rec("2026-02-26T10:00:00Z", 9, 900), // before the range
		rec("2026-02-28T23:59:59Z", 1, 10),
		rec("2026-03-01T00:00:00Z", 2, 20),
		rec("2026-03-02T14:00:00Z", 4, 40),
		rec("2026-03-02T14:30:00Z", 0.5, 5),
	}}
	got, err := seriesOf(context.Background(), s, echogate.UsageFilter{}, 3, now)
	if err != nil {
		t.Fatal(err)
	}
	var days []string
	for _, d := range got.Days {
		days = append(days, fmt.Sprintf("%s=%g/%d/%d", d.Day, d.CostUSD, d.InputTokens, d.CachedInputTokens))
	}
	if want := "2026-02-28=1/10/2 2026-03-01=2/20/4 2026-03-02=4.5/45/9"; strings.Join(days, " ") != want {
		t.Errorf("days = %s, want %s", strings.Join(days, " "), want)
	}
	if got.From != "2026-02-28" || got.To != "2026-03-02" || got.Timezone != "UTC" {
		t.Errorf("range = %s..%s %s, want 2026-02-28..2026-03-02 UTC", got.From, got.To, got.Timezone)
	}
	if got.Total.CostUSD != 7.5 || got.Today.CostUSD != 4.5 || got.MonthToDate.CostUSD != 6.5 {
		t.Errorf("total, today, month = %g, %g, %g; want 7.5, 4.5, 6.5", got.Total.CostUSD, got.Today.CostUSD, got.MonthToDate.CostUSD)
	}
	if s.calls != 4 {
		t.Errorf("store calls = %d, want 4 (one per day and the month)", s.calls)
	}

	s = &summer{fail: 2}
	if _, err := seriesOf(context.Background(), s, echogate.UsageFilter{}, 3, now); err == nil || !strings.Contains(err.Error(), "2026-03-01") {
		t.Errorf("seriesOf with a failing store = %v, want the error naming the day", err)
	}
}

func TestMaskArgs(t *testing.T) {
	for name, tt := range map[string]struct {
		in, want string
		n        int
	}{
		"secret masked":   {`{"url":"https://x","api_key":"sk-1","nested":{"Password":"p"}}`, `"api_key": "***"`, 1000},
		"nested masked":   {`{"nested":{"Password":"p"}}`, `"Password": "***"`, 1000},
		"plain kept":      {`{"timezone":"UTC"}`, `"timezone": "UTC"`, 1000},
		"not JSON capped": {"abcdef", "abc…", 3},
		"utf-8 kept":      {"ééé", "é…", 3},
	} {
		if got := pipeline.RedactArgs(tt.in, tt.n); !strings.Contains(got, tt.want) || strings.Contains(got, "sk-1") {
			t.Errorf("%s: RedactArgs(%q) = %q, want it to contain %q and no secret", name, tt.in, got, tt.want)
		}
	}
}
