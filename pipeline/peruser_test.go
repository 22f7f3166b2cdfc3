package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/pipeline"
)

// Issue 36, finding 9: six parallel turns of one user spent $0.131 against a $0.035 per-user
// daily limit, because every turn's check saw only the ledger, and no turn's call was in it
// yet. With reservations, a call's estimate counts against the budgets from its check until
// its usage is in the ledger: parallel turns together stay within the limit, as long as each
// call costs no more than its estimate (here the output is capped by max_tokens and the
// prompt is shorter than estimated).
func TestParallelTurnsCannotOverrunTheUserBudget(t *testing.T) {
	const (
		turns    = 6
		limit    = 0.035
		maxOut   = 500
		outPrice = 20.0 // USD per million output tokens: a call costs about $0.01
	)
	prices := cost.Table{"m": {InputPerMTok: 1, OutputPerMTok: outPrice}}
	var tr *cost.Tracker
	gate := make(chan struct{})
	entered := make(chan struct{}, turns)
	h := start(t, opts{cfg: pipeline.Config{Model: "m", MaxTokens: maxOut}, deps: func(d *pipeline.Deps) {
		var err error
		tr, err = cost.New(cost.Config{Limits: cost.Limits{PerUserDayUSD: limit}, Prices: prices,
			Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }}, d.Store, nil)
		if err != nil {
			t.Fatal(err)
		}
		d.Budget, d.Pricer = tr, prices
		d.UsageObservers = append(d.UsageObservers, tr.Observe)
	}})
	// Every call reports the most output it may produce and a prompt smaller than the estimate.
	h.model.SetDefault(agenttest.Step{Text: "answer", Gate: gate,
		Usage:  echogate.Usage{InputTokens: 10, OutputTokens: maxOut},
		Expect: func(agent.Request) error { entered <- struct{}{}; return nil }})
	for i := range turns {
		h.submit(msg(fmt.Sprintf("par%d", i), "ann", "write me a long answer"))
	}
	// Every turn is either in its model call (held at the gate) or refused by the budget.
	var refused []echogate.TurnEvent
	for inCall := 0; inCall+len(refused) < turns; {
		select {
		case <-entered:
			inCall++
		case d := <-h.rep.Done:
			refused = append(refused, d)
		case <-time.After(10 * time.Second):
			t.Fatalf("after 10s %d turns are in a model call and %d were refused, want %d in all", inCall, len(refused), turns)
		}
	}
	close(gate)
	for len(refused) < turns {
		refused = append(refused, h.waitDone())
	}
	// The precondition of the bound: no call cost more than the estimate it was admitted with.
	actual := prices.Price(echogate.Usage{Model: "m", InputTokens: 10, OutputTokens: maxOut})
	for i, req := range h.model.Requests() {
		if est := tr.Estimate(req); actual > est {
			t.Fatalf("call %d costs %v, over its estimate %v: the test cannot show the bound", i, actual, est)
		}
	}
	led, err := h.store.SumUsage(context.Background(), echogate.UsageFilter{UserID: "web:ann"})
	if err != nil {
		t.Fatal(err)
	}
	if led.CostUSD > limit+1e-9 {
		t.Errorf("spend of six parallel turns = %s, want at most the daily limit %s (%d model calls ran)",
			cost.USD(led.CostUSD), cost.USD(limit), h.model.Calls())
	}
	var stopped int
	for _, d := range refused {
		if d.Status == "aborted" && strings.Contains(d.Text, "daily budget") {
			stopped++
		}
	}
	if calls := h.model.Calls(); calls+stopped != turns || calls == 0 {
		t.Errorf("model calls = %d, budget refusals = %d; want %d turns answered, some by the model", calls, stopped, turns)
	}
}

// Issue 36, Build 6: one user's turns running at once, across conversations, are capped; a
// message over the cap gets one polite answer and no model call, and another user is not held
// up by it. When a turn ends, the user may start another.
func TestPerUserConcurrencyCap(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 8)
	h := start(t, opts{cfg: pipeline.Config{PerUser: pipeline.PerUserLimits{MaxConcurrentTurns: 2}}})
	h.model.SetDefault(agenttest.Step{Text: "done", Gate: gate,
		Expect: func(agent.Request) error { entered <- struct{}{}; return nil }})
	waitEntered := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatalf("a turn did not reach the model within 10s")
			}
		}
	}
	h.submit(msg("cap1", "ann", "first"))
	h.submit(msg("cap2", "ann", "second"))
	waitEntered(2)
	over := msg("cap3", "ann", "third")
	h.submit(over)
	d := h.waitDone()
	if d.EventID != over.ID || !strings.Contains(d.Text, "You have 2 requests running already") || h.model.Calls() != 2 {
		t.Fatalf("third turn of ann = %+v after %d model calls, want the cap's answer and 2 calls", d, h.model.Calls())
	}
	h.submit(msg("capb", "bob", "mine"))
	waitEntered(1) // bob's turn runs while ann is at her cap
	close(gate)
	for range 3 {
		if d := h.waitDone(); d.Status != "done" || d.Text != "done" {
			t.Errorf("a running turn ended %+v, want done", d)
		}
	}
	h.submit(msg("cap3", "ann", "third, again"))
	if d := h.waitDone(); d.Text != "done" {
		t.Errorf("ann's turn after hers finished = %+v, want it answered by the model", d)
	}
	var answers int
	for _, e := range h.rep.Events() {
		if e.Type == echogate.TurnDone && e.EventID == over.ID {
			answers++
		}
	}
	if answers != 1 {
		t.Errorf("the refused message was answered %d times, want once", answers)
	}
}

// Issue 36, Build 6: one user starts at most per_minute turns a minute after a burst; a message
// over the rate gets one polite answer saying when to send it again, and the clock (injected)
// refills the bucket.
func TestPerUserRateLimitAnswersPolitely(t *testing.T) {
	h := start(t, opts{cfg: pipeline.Config{PerUser: pipeline.PerUserLimits{RatePerMinute: 2, Burst: 2}}})
	h.model.SetDefault(agenttest.Reply("answer"))
	for i, tt := range []struct {
		user, want string
		advance    time.Duration
	}{
		{"ann", "answer", 0},
		{"ann", "answer", 0},
		{"ann", "sending requests faster than I take them (2 a minute), so I didn't start this one. Please send it again in 30s.", 0},
		{"bob", "answer", 0},
		{"ann", "Please send it again in 10s.", 20 * time.Second},
		{"ann", "answer", 10 * time.Second},
	} {
		h.advance(tt.advance)
		ev := msg(fmt.Sprintf("rate%d", i), tt.user, "hello")
		h.submit(ev)
		d := h.waitDone()
		if d.EventID != ev.ID || !strings.Contains(d.Text, tt.want) {
			t.Errorf("message %d of %s: answer = %q, want %q", i, tt.user, d.Text, tt.want)
		}
	}
	if n := h.model.Calls(); n != 4 {
		t.Errorf("model calls = %d, want 4 (the two messages over the rate were not run)", n)
	}
}

// Issue 36, finding 11: the plan system tool was offered and run outside an agent's tool
// allow-list. An agent whose tools do not include "plan" is not offered it, and a plan call the
// model makes anyway is refused like any tool outside the list; an agent listing it keeps it.
func TestPlanOnlyUnderTheAllowList(t *testing.T) {
	for name, tt := range map[string]struct {
		tools    []string
		offered  bool
		planPost bool
	}{
		"allow-list without plan": {[]string{"current_time"}, false, false},
		"allow-list with plan":    {[]string{"current_time", "plan"}, true, true},
		"no allow-list":           {nil, true, true},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := pipeline.Config{Agents: pipeline.Agents{Default: pipeline.Profile{Tools: tt.tools}}}
			h := start(t, opts{cfg: cfg},
				agenttest.CallTool("plan", `{"action":"set","title":"Sneak","steps":["one"]}`), agenttest.Reply("ok"))
			h.submit(msg("plan", "ann", "do it"))
			h.waitDone()
			reqs := h.model.Requests()
			offered := false
			for _, s := range reqs[0].Tools {
				offered = offered || s.Name == "plan"
			}
			if offered != tt.offered {
				t.Errorf("plan offered = %v, want %v", offered, tt.offered)
			}
			var planned bool
			for _, p := range h.rep.Posts() {
				planned = planned || p.Out.Kind == echogate.OutPlan
			}
			if planned != tt.planPost {
				t.Errorf("plan posted = %v, want %v", planned, tt.planPost)
			}
			last := reqs[len(reqs)-1].Messages
			if res := last[len(last)-1]; !tt.offered && (!res.IsError || !strings.Contains(res.Content, `"plan"`)) {
				t.Errorf("result of the plan call = %+v, want it refused", res)
			}
		})
	}
}
