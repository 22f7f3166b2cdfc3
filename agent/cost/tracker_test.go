package cost

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
)

// fakeLedger is an in-memory ledger: it stores usage records and sums them by filter, counting
// queries. (pipeline/pipelinetest.MemStore would break the layer rule here.)
type fakeLedger struct {
	mu      sync.Mutex
	recs    []echogate.UsageRecord
	queries atomic.Int64
	err     error
	during  func() // runs inside SumUsage, outside the lock
}

func (l *fakeLedger) add(r echogate.UsageRecord) {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
}

func (l *fakeLedger) SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error) {
	l.queries.Add(1)
	if err := ctx.Err(); err != nil {
		return echogate.Usage{}, err
	}
	if l.during != nil {
		l.during()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return echogate.Usage{}, l.err
	}
	var u echogate.Usage
	for _, r := range l.recs {
		if f.Turn != "" && r.Turn != f.Turn || f.Session != "" && r.Session != f.Session ||
			f.UserID != "" && r.UserID != f.UserID || f.Channel != "" && r.Channel != f.Channel ||
			f.Agent != "" && r.Agent != f.Agent {
			continue
		}
		if !f.Since.IsZero() && r.At.Before(f.Since) || !f.Until.IsZero() && !r.At.Before(f.Until) {
			continue
		}
		u.InputTokens += r.Usage.InputTokens
		u.OutputTokens += r.Usage.OutputTokens
		u.CachedInputTokens += r.Usage.CachedInputTokens
		u.CostUSD += r.Usage.CostUSD
	}
	return u, nil
}

// clock is a settable fake clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

var testPrices = Table{"gpt-4o": {InputPerMTok: 2.5, OutputPerMTok: 10}}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func rec(user, channel string, when time.Time, usd float64) echogate.UsageRecord {
	return echogate.UsageRecord{Turn: "t_" + when.Format("150405"), Session: echogate.SessionKey(channel), UserID: user, Channel: channel,
		Trigger: echogate.TriggerMessage, Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "gpt-4o", CostUSD: usd}, At: when}
}

func TestUserDailyBudgetStopsThirdTurn(t *testing.T) {
	clk := &clock{now: at("2025-03-14T18:48:00Z")}
	l := &fakeLedger{}
	tr, err := New(Config{Limits: Limits{PerUserDayUSD: 0.01}, Prices: testPrices, Now: clk.Now}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each turn: 1000 input + 250 output tokens of gpt-4o = $0.005.
	model := agenttest.NewScriptedModel()
	model.SetDefault(agenttest.Step{Text: "ok", Usage: echogate.Usage{InputTokens: 1000, OutputTokens: 250}})
	turn := func(n int, user string) agent.Result {
		scope := Scope{Turn: fmt.Sprintf("t_%d", n), Session: "slack:C1", UserID: user, Channel: "slack:C1", Trigger: echogate.TriggerMessage}
		return agent.Run(context.Background(), agent.Input{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hello there"}}},
			agent.Runtime{
				Model:  model,
				Params: agent.Params{Model: "gpt-4o", MaxTokens: 100},
				BeforeModelCall: func(ctx context.Context, req agent.Request) error {
					return tr.Check(ctx, scope, req)
				},
				ReportUsage: func(u echogate.Usage) { // the pipeline's ledger path
					u.CostUSD = testPrices.Price(u)
					l.add(echogate.UsageRecord{Turn: scope.Turn, Session: scope.Session, UserID: scope.UserID, Channel: scope.Channel,
						Trigger: scope.Trigger, Usage: u, At: clk.Now()})
				},
			})
	}
	for i := 1; i <= 2; i++ {
		if res := turn(i, "slack:U1"); res.Status != agent.StatusDone {
			t.Fatalf("turn %d = %s (%v), want done", i, res.Status, res.Err)
		}
	}
	res := turn(3, "slack:U1")
	if res.Status != agent.StatusAborted || !errors.Is(res.Err, agent.ErrBudget) || res.FinishReason != "budget" {
		t.Fatalf("turn 3 = %s %q (%v), want aborted by the budget", res.Status, res.FinishReason, res.Err)
	}
	if model.Calls() != 2 {
		t.Errorf("model calls = %d, want 2 (the third turn stopped before calling the model)", model.Calls())
	}
	want := "your daily budget of $0.01 is used up ($0.01 spent); it resets at 00:00 UTC (in 5h12m)"
	if res.Err.Error() != want {
		t.Errorf("turn 3 error = %q, want %q", res.Err, want)
	}
	var le *LimitError
	if !errors.As(res.Err, &le) || le.Limit != LimitPerUserDay || !le.ResetsAt.Equal(at("2025-03-15T00:00:00Z")) || le.Deferred {
		t.Errorf("turn 3 error = %+v, want a per-user-day LimitError resetting at midnight", le)
	}
	if res := turn(4, "slack:U2"); res.Status != agent.StatusDone {
		t.Errorf("another user's turn = %s (%v), want done", res.Status, res.Err)
	}
	clk.Set(at("2025-03-15T00:00:00Z"))
	if res := turn(5, "slack:U1"); res.Status != agent.StatusDone {
		t.Errorf("next day's turn = %s (%v), want done", res.Status, res.Err)
	}
}

func TestResetBoundaries(t *testing.T) {
	cest := time.FixedZone("CEST", 2*3600)
	for name, tt := range map[string]struct {
		loc        *time.Location
		limits     Limits
		recs       []echogate.UsageRecord
		now        string
		wantErr    string // "" means allowed
		wantResets string
	}{
		"day: spent yesterday": {nil, Limits{PerUserDayUSD: 1}, []echogate.UsageRecord{rec("u", "c", at("2025-01-30T23:59:59Z"), 5)},
			"2025-01-31T00:00:00Z", "", ""},
		"day: spent today": {nil, Limits{PerUserDayUSD: 1}, []echogate.UsageRecord{rec("u", "c", at("2025-01-31T00:00:00Z"), 5)},
			"2025-01-31T23:59:00Z", "your daily budget of $1.00 is used up ($5.00 spent); it resets at 00:00 UTC (in 1m)", "2025-02-01T00:00:00Z"},
		"month: last second of January": {nil, Limits{PerMonthUSD: 10}, []echogate.UsageRecord{rec("a", "c", at("2025-01-02T10:00:00Z"), 6), rec("b", "d", at("2025-01-31T23:00:00Z"), 6)},
			"2025-01-31T23:59:59Z", "the gateway's monthly budget of $10.00 is used up ($12.00 spent); it resets on Feb 1 at 00:00 UTC (in less than a minute)", "2025-02-01T00:00:00Z"},
		"month: first of February": {nil, Limits{PerMonthUSD: 10}, []echogate.UsageRecord{rec("a", "c", at("2025-01-31T23:59:59Z"), 12)},
			"2025-02-01T00:00:00Z", "", ""},
		"month: in 12 days": {nil, Limits{PerMonthUSD: 10}, []echogate.UsageRecord{rec("a", "c", at("2025-02-01T00:00:00Z"), 12)},
			"2025-02-16T21:00:00Z", "resets on Mar 1 at 00:00 UTC (in 12d3h)", "2025-03-01T00:00:00Z"},
		"zone: local day began": {cest, Limits{PerDayUSD: 1}, []echogate.UsageRecord{rec("a", "c", at("2025-06-30T21:59:00Z"), 5)},
			"2025-06-30T22:00:00Z", "", ""},
		"zone: same local day": {cest, Limits{PerDayUSD: 1}, []echogate.UsageRecord{rec("a", "c", at("2025-06-30T22:30:00Z"), 5)},
			"2025-07-01T12:00:00Z", "the gateway's daily budget of $1.00 is used up ($5.00 spent); it resets at 00:00 CEST (in 10h00m)", "2025-07-01T22:00:00Z"},
		"channel day": {nil, Limits{PerChannelDayUSD: 2}, []echogate.UsageRecord{rec("other", "c", at("2025-01-31T01:00:00Z"), 2)},
			"2025-01-31T02:00:00Z", "this channel's daily budget of $2.00 is used up", "2025-02-01T00:00:00Z"},
	} {
		l := &fakeLedger{recs: tt.recs}
		clk := &clock{now: at(tt.now)}
		tr, err := New(Config{Limits: tt.limits, Prices: testPrices, Now: clk.Now, Location: tt.loc}, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = tr.Check(context.Background(), Scope{Turn: "t", UserID: "u", Channel: "c", Trigger: echogate.TriggerMessage}, agent.Request{Model: "unpriced"})
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Check = %v, want nil", name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: Check = %v, want an error containing %q", name, err, tt.wantErr)
		case tt.wantErr != "":
			if got, ok := DeferUntil(err); !ok || !got.Equal(at(tt.wantResets)) {
				t.Errorf("%s: DeferUntil = %v, %v, want %s", name, got, ok, tt.wantResets)
			}
		}
	}
}

func TestLimitMessages(t *testing.T) {
	now := at("2025-05-10T12:00:00Z")
	for name, tt := range map[string]struct {
		limits Limits
		want   string
		kind   LimitKind
	}{
		"turn":                {Limits{PerTurnUSD: 0.5}, "this turn's budget of $0.50 is used up ($1.00 spent); send a new message to continue in a new turn", LimitPerTurn},
		"session":             {Limits{PerSessionUSD: 0.75}, "this conversation's budget of $0.75 is used up ($1.00 spent); start a new conversation to continue", LimitPerSession},
		"user day":            {Limits{PerUserDayUSD: 0.9}, "your daily budget of $0.90 is used up ($1.00 spent); it resets at 00:00 UTC (in 12h00m)", LimitPerUserDay},
		"most specific first": {Limits{PerDayUSD: 0.1, PerTurnUSD: 0.2}, "this turn's budget", LimitPerTurn},
		"would exceed": {Limits{PerUserDayUSD: 1.004}, "your daily budget of $1.00 would be exceeded by this request ($1.00 spent, this call needs about $0.0051)",
			LimitPerUserDay},
	} {
		l := &fakeLedger{recs: []echogate.UsageRecord{{Turn: "t1", Session: "s1", UserID: "u1", Channel: "c1", Usage: echogate.Usage{CostUSD: 1}, At: now}}}
		tr, err := New(Config{Limits: tt.limits, Prices: testPrices, Now: func() time.Time { return now }}, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = tr.Check(context.Background(), Scope{Turn: "t1", Session: "s1", UserID: "u1", Channel: "c1"},
			agent.Request{Model: "gpt-4o", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hi"}}})
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != tt.kind || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: Check = %v, want a %s LimitError starting %q", name, err, tt.kind, tt.want)
		}
	}
}

func TestConsolidationDeferred(t *testing.T) {
	now := at("2025-03-14T20:00:00Z")
	l := &fakeLedger{recs: []echogate.UsageRecord{rec("slack:U1", "slack:C1", now.Add(-time.Hour), 0.02)}}
	tr, err := New(Config{Limits: Limits{PerUserDayUSD: 0.01}, Prices: testPrices, Now: func() time.Time { return now }}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewScriptedModel(agenttest.Reply("summary"))
	// A consolidation job: check the budget, and defer instead of calling the model.
	job := func(ctx context.Context) (ran bool, retryAt time.Time, err error) {
		req := agent.Request{Model: "gpt-4o", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "summarize"}}}
		if err := tr.Check(ctx, Scope{UserID: "slack:U1", Trigger: echogate.TriggerConsolidation}, req); err != nil {
			if errors.Is(err, ErrDeferred) {
				until, _ := DeferUntil(err)
				return false, until, nil
			}
			return false, time.Time{}, err
		}
		_, err = model.Generate(ctx, req, nil)
		return true, time.Time{}, err
	}
	ran, retryAt, err := job(context.Background())
	if err != nil || ran || !retryAt.Equal(at("2025-03-15T00:00:00Z")) {
		t.Errorf("job = ran %v, retry at %v, %v; want deferred to midnight", ran, retryAt, err)
	}
	if model.Calls() != 0 {
		t.Errorf("model calls = %d, want 0 (deferred, not run)", model.Calls())
	}
	err = tr.Check(context.Background(), Scope{UserID: "slack:U1", Trigger: echogate.TriggerScheduled}, agent.Request{})
	var le *LimitError
	if !errors.Is(err, ErrDeferred) || !errors.Is(err, agent.ErrBudget) || !errors.As(err, &le) || !le.Deferred ||
		!strings.HasPrefix(err.Error(), "scheduled deferred: your daily budget") {
		t.Errorf("scheduled Check = %v, want a deferred LimitError wrapping ErrDeferred and ErrBudget", err)
	}
	if err := tr.Check(context.Background(), Scope{UserID: "slack:U1", Trigger: echogate.TriggerMessage}, agent.Request{}); errors.Is(err, ErrDeferred) || !errors.Is(err, agent.ErrBudget) {
		t.Errorf("message Check = %v, want ErrBudget without ErrDeferred", err)
	}
}

func TestSetLimitsWhileChecking(t *testing.T) {
	now := at("2025-03-14T12:00:00Z")
	l := &fakeLedger{recs: []echogate.UsageRecord{rec("u", "c", now, 0.5)}}
	tr, err := New(Config{Prices: testPrices, Now: func() time.Time { return now }}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := tr.Check(context.Background(), Scope{UserID: "u"}, agent.Request{})
				if err != nil && !errors.Is(err, agent.ErrBudget) {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		v := 0.25
		if i%2 == 1 {
			v = 1
		}
		if err := tr.SetLimits(Limits{PerUserDayUSD: v}); err != nil {
			t.Fatal(err)
		}
		_ = tr.Limits()
	}
	close(stop)
	wg.Wait()
	if err := tr.SetLimits(Limits{PerUserDayUSD: 0.25}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(context.Background(), Scope{UserID: "u"}, agent.Request{}); !errors.Is(err, agent.ErrBudget) {
		t.Errorf("Check after lowering the limit = %v, want ErrBudget", err)
	}
	if err := tr.SetLimits(Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(context.Background(), Scope{UserID: "u"}, agent.Request{}); err != nil {
		t.Errorf("Check after removing limits = %v, want nil", err)
	}
}

func TestValidation(t *testing.T) {
	l := &fakeLedger{}
	for name, tt := range map[string]struct {
		cfg    Config
		ledger Ledger
		want   string
	}{
		"no ledger":       {Config{}, nil, "needs a ledger"},
		"negative limit":  {Config{Limits: Limits{PerDayUSD: -1}}, l, "budgets.per_day_usd = -1 is not a valid amount"},
		"NaN limit":       {Config{Limits: Limits{PerTurnUSD: math.NaN()}}, l, "budgets.per_turn_usd = NaN"},
		"negative output": {Config{OutputAllowance: -5}, l, "output allowance -5 is negative"},
		"negative ttl":    {Config{CacheTTL: -time.Second}, l, "cache TTL -1s is negative"},
		"negative price":  {Config{Prices: Table{"m": {InputPerMTok: -1}}}, l, "price of m"},
	} {
		_, err := New(tt.cfg, tt.ledger, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error containing %q", name, err, tt.want)
		}
	}
	tr, err := New(Config{Limits: Limits{PerDayUSD: 3}}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetLimits(Limits{PerMonthUSD: math.Inf(1)}); err == nil || !strings.Contains(err.Error(), "per_month_usd") {
		t.Errorf("SetLimits(+Inf) = %v, want an error naming per_month_usd", err)
	}
	if got := tr.Limits(); got.PerDayUSD != 3 {
		t.Errorf("Limits after a rejected SetLimits = %+v, want the old limits", got)
	}
}

func TestLedgerErrors(t *testing.T) {
	boom := errors.New("database is locked")
	for _, failOpen := range []bool{false, true} {
		l := &fakeLedger{err: boom}
		tr, err := New(Config{Limits: Limits{PerUserDayUSD: 1}, FailOpen: failOpen}, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = tr.Check(context.Background(), Scope{Turn: "t9", UserID: "u"}, agent.Request{})
		if failOpen && err != nil {
			t.Errorf("FailOpen: Check = %v, want nil", err)
		}
		if !failOpen && (!errors.Is(err, boom) || errors.Is(err, agent.ErrBudget) || !strings.Contains(err.Error(), "per_user_day_usd for turn t9")) {
			t.Errorf("Check with a ledger error = %v, want it wrapped with the limit and turn, not ErrBudget", err)
		}
	}
}

func TestNoLimitsNoQueries(t *testing.T) {
	l := &fakeLedger{}
	tr, err := New(Config{}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(context.Background(), Scope{Turn: "t", Session: "s", UserID: "u", Channel: "c"}, agent.Request{}); err != nil || l.queries.Load() != 0 {
		t.Errorf("Check without limits = %v with %d queries, want nil with 0", err, l.queries.Load())
	}
}

func TestCacheAndObserve(t *testing.T) {
	clk := &clock{now: at("2025-03-14T12:00:00Z")}
	l := &fakeLedger{}
	tr, err := New(Config{Limits: Limits{PerUserDayUSD: 1, PerDayUSD: 100}, Now: clk.Now, CacheTTL: 5 * time.Second}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope{UserID: "u"}
	check := func() error { return tr.Check(context.Background(), scope, agent.Request{}) }
	if err := check(); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil || l.queries.Load() != 2 {
		t.Fatalf("second check = %v after %d queries, want nil after 2 (user day and day, then cached)", err, l.queries.Load())
	}
	// This process records spend: Observe keeps the cached sums current without a query.
	r := rec("u", "c", clk.Now(), 0.6)
	l.add(r)
	tr.Observe(r)
	tr.Observe(rec("someone-else", "c", clk.Now(), 0.6))
	if err := check(); err != nil || l.queries.Load() != 2 {
		t.Errorf("check after $0.60 = %v after %d queries, want nil, still 2", err, l.queries.Load())
	}
	r = rec("u", "c", clk.Now(), 0.6)
	l.add(r)
	tr.Observe(r)
	if err := check(); !errors.Is(err, agent.ErrBudget) || l.queries.Load() != 2 || !strings.Contains(err.Error(), "($1.20 spent)") {
		t.Errorf("check after $1.20 = %v after %d queries, want the daily budget hit from the cache", err, l.queries.Load())
	}
	// Another replica's spend (only in the store) shows up once the TTL passed.
	l.add(rec("v", "c", clk.Now(), 0.9))
	clk.Set(clk.Now().Add(5 * time.Second))
	if err := tr.Check(context.Background(), Scope{UserID: "v"}, agent.Request{}); err != nil {
		t.Errorf("check for v = %v, want nil ($0.90 < $1)", err)
	}
	if q := l.queries.Load(); q != 4 {
		t.Errorf("queries after the TTL = %d, want 4 (v's day and the expired gateway day)", q)
	}
	// A sum read while an Observe ran is used but not cached.
	clk.Set(clk.Now().Add(time.Minute))
	l.during = func() { tr.Observe(rec("w", "c", clk.Now(), 0)) }
	_ = tr.Check(context.Background(), Scope{UserID: "w"}, agent.Request{})
	l.during = nil
	before := l.queries.Load()
	_ = tr.Check(context.Background(), Scope{UserID: "w"}, agent.Request{})
	if got := l.queries.Load() - before; got != 2 {
		t.Errorf("queries after a racing Observe = %d, want 2 (nothing was cached)", got)
	}
}

func TestEstimate(t *testing.T) {
	modelFor := func(req agent.Request) string {
		if req.Model == "routed" {
			return "gpt-4o" // what a router would pick
		}
		return ""
	}
	tr, err := New(Config{Prices: testPrices, ModelFor: modelFor}, &fakeLedger{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", 3984) // + 16 framing = 4000 chars = 1000 tokens
	for name, tt := range map[string]struct {
		req  agent.Request
		want float64
	}{
		"default allowance": {agent.Request{Model: "gpt-4o", Messages: []echogate.Message{{Content: text}}}, (1000*2.5 + 512*10) / 1e6},
		"max tokens":        {agent.Request{Model: "gpt-4o", MaxTokens: 100, Messages: []echogate.Message{{Content: text}}}, (1000*2.5 + 100*10) / 1e6},
		"unknown model":     {agent.Request{Model: "llama", Messages: []echogate.Message{{Content: text}}}, 0},
		"routed model":      {agent.Request{Model: "routed", Messages: []echogate.Message{{Content: text}}}, (1000*2.5 + 512*10) / 1e6},
	} {
		if got := tr.Estimate(tt.req); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: Estimate = %g, want %g", name, got, tt.want)
		}
	}
}

func TestFormatting(t *testing.T) {
	for v, want := range map[float64]string{0: "$0.00", 0.01: "$0.01", 0.0123: "$0.0123", 0.5: "$0.50", 5: "$5.00", 12.345: "$12.35", 0.00001: "<$0.0001", 0.10004: "$0.10"} {
		if got := USD(v); got != want {
			t.Errorf("USD(%v) = %q, want %q", v, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		20 * time.Second: "less than a minute", 45 * time.Minute: "45m", 5*time.Hour + 12*time.Minute: "5h12m",
		(12*24 + 3) * time.Hour: "12d3h", 10 * time.Hour: "10h00m",
	} {
		if got := Until(d); got != want {
			t.Errorf("Until(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestReport(t *testing.T) {
	now := at("2025-03-14T18:48:00Z")
	l := &fakeLedger{recs: []echogate.UsageRecord{
		{UserID: "slack:U1", Channel: "slack:C1", Usage: echogate.Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: 0.0123}, At: now.Add(-time.Hour)},
		{UserID: "slack:U1", Channel: "slack:C2", Session: "slack:C2:t1", Usage: echogate.Usage{InputTokens: 20000, OutputTokens: 5000, CachedInputTokens: 17000, CostUSD: 1.5}, At: at("2025-03-02T10:00:00Z")},
		{UserID: "slack:U2", Channel: "slack:C1", Usage: echogate.Usage{CostUSD: 2}, At: now.Add(-time.Minute)},
	}}
	tr, err := New(Config{Limits: Limits{PerUserDayUSD: 5, PerChannelDayUSD: 10, PerTurnUSD: 0.5, PerDayUSD: 40, PerMonthUSD: 1000},
		Now: func() time.Time { return now }}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Report(context.Background(), "slack:U1", "slack:C1", "slack:C2:t1")
	if err != nil {
		t.Fatal(err)
	}
	want := "**Your usage**\n" +
		"- Today: $0.0123 (1.5k tokens) of your $5.00 daily budget; resets at 00:00 UTC (in 5h12m)\n" +
		"- This month: $1.51 (26k tokens, 80% of input cached)\n" +
		"- This conversation: $1.50 (25k tokens, 85% of input cached)\n" +
		"- This channel today: $2.01 of its $10.00 daily budget\n" +
		"- Limits: $0.50 per turn\n" +
		"\n**Gateway**: 5% of today's budget, <1% of this month's budget used"
	if got != want {
		t.Errorf("Report =\n%s\nwant\n%s", got, want)
	}
	if _, err := tr.Report(context.Background(), "", "", ""); err == nil {
		t.Error("Report(no user) = nil error, want one")
	}
	l.err = errors.New("disk I/O error")
	if _, err := tr.Report(context.Background(), "slack:U1", "", ""); err == nil || !strings.Contains(err.Error(), "usage report for slack:U1") {
		t.Errorf("Report with a ledger error = %v, want it wrapped with the user", err)
	}
}
