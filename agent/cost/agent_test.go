package cost

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// An agent's own limits sum only that agent's spend, and say whose limit it is.
func TestAgentLimits(t *testing.T) {
	now := at("2025-03-14T12:00:00Z")
	spent := func(agentName string, usd float64) echogate.UsageRecord {
		r := rec("slack:U1", "slack:C1", now.Add(-time.Hour), usd)
		r.Agent = agentName
		return r
	}
	l := &fakeLedger{recs: []echogate.UsageRecord{spent("oncall", 0.3), spent("docs", 5)}}
	tr, err := New(Config{Agent: "oncall", Limits: Limits{PerUserDayUSD: 0.5}, Now: func() time.Time { return now }}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope{UserID: "slack:U1", Channel: "slack:C1", Trigger: echogate.TriggerMessage}
	if err := tr.Check(context.Background(), scope, agent.Request{}); err != nil {
		t.Fatalf("Check with $0.30 of the agent's $0.50 spent (and $5 of another agent's) = %v, want nil", err)
	}
	l.add(spent("oncall", 0.25))
	err = tr.Check(context.Background(), scope, agent.Request{})
	if !errors.Is(err, agent.ErrBudget) || !strings.HasPrefix(err.Error(), "your daily budget with the oncall agent of $0.50 is used up") {
		t.Errorf("Check with $0.55 of the agent's $0.50 spent = %v, want the oncall agent's daily budget used up", err)
	}
	day, err := New(Config{Agent: "docs", Limits: Limits{PerDayUSD: 1}, Now: func() time.Time { return now }}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := day.Check(context.Background(), scope, agent.Request{}); err == nil || !strings.HasPrefix(err.Error(), "the docs agent's daily budget of $1.00 is used up ($5.00 spent)") {
		t.Errorf("Check of the docs agent's $1 day with $5 spent = %v, want the docs agent's daily budget used up", err)
	}
}

func TestAgentMatches(t *testing.T) {
	r := echogate.UsageRecord{UserID: "u", Agent: "oncall"}
	for _, tt := range []struct {
		f    echogate.UsageFilter
		want bool
	}{
		{echogate.UsageFilter{Agent: "oncall"}, true},
		{echogate.UsageFilter{Agent: "docs"}, false},
		{echogate.UsageFilter{UserID: "u"}, true},
	} {
		if got := matches(tt.f, r); got != tt.want {
			t.Errorf("matches(%+v, agent oncall) = %v, want %v", tt.f, got, tt.want)
		}
	}
}
