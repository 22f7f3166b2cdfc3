package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/cost"
)

// ledger is a fake ledger entry point: it prices usage like the pipeline's reportUsage does and
// keeps every entry in order.
type ledger struct {
	prices cost.Table
	mu     sync.Mutex
	recs   []echogate.Usage
}

func (l *ledger) report(u echogate.Usage) {
	if u.CostUSD == 0 {
		u.CostUSD = l.prices.Price(u)
	}
	l.mu.Lock()
	l.recs = append(l.recs, u)
	l.mu.Unlock()
}

func (l *ledger) entries() []echogate.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]echogate.Usage(nil), l.recs...)
}

var prices = cost.Table{
	"light":  {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	"strong": {InputPerMTok: 2.5, OutputPerMTok: 10},
}

func unavailable(status int) error {
	return fmt.Errorf("fake: HTTP %d: %w", status, agent.ErrUnavailable)
}

func collect(onText *strings.Builder) func(agent.Delta) error {
	return func(d agent.Delta) error { onText.WriteString(d.Text); return nil }
}

func TestGenerateFallsBackAndReportsEveryAttemptOnce(t *testing.T) {
	strong := agenttest.NewScriptedModel(agenttest.Fail(unavailable(503)))
	light := agenttest.NewScriptedModel(agenttest.Step{Text: "Paris.", Usage: echogate.Usage{InputTokens: 1000, OutputTokens: 100}})
	l := &ledger{prices: prices}
	r, err := New(Config{Routes: []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}}, OnUsage: l.report},
		map[string]agent.Model{"strong": strong, "light": light}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := agent.Run(context.Background(), agent.Input{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "capital of France?"}}},
		agent.Runtime{Model: r, Params: agent.Params{Model: "strong"}, ReportUsage: l.report})
	if res.Status != agent.StatusDone || res.Answer != "Paris." {
		t.Fatalf("Run = %s %q (%v), want done \"Paris.\"", res.Status, res.Answer, res.Err)
	}
	if res.Model != "light" || res.RouteReason != "route main: default; fallback after strong: 503" {
		t.Errorf("Run model, reason = %q, %q, want light, \"route main: default; fallback after strong: 503\"", res.Model, res.RouteReason)
	}
	got := l.entries()
	if len(got) != 2 {
		t.Fatalf("ledger = %+v, want 2 entries (failed strong, answered light)", got)
	}
	// The scripted failure reports an estimated prompt: a failed attempt keeps its real usage.
	if u := got[0]; u.Model != "strong" || !u.Failed || u.InputTokens == 0 || u.CostUSD != prices.Price(u) {
		t.Errorf("ledger[0] = %+v, want strong, failed, its real tokens priced", u)
	}
	if u := got[1]; u.Model != "light" || u.Failed || u.InputTokens != 1000 || u.OutputTokens != 100 || u.CostUSD <= 0 {
		t.Errorf("ledger[1] = %+v, want light, 1000/100 tokens, priced", u)
	}
	// The loop's own usage list holds only the answering attempt: nothing is counted twice.
	if len(res.Usage) != 1 || res.Usage[0].Model != "light" {
		t.Errorf("Result.Usage = %+v, want only the light attempt", res.Usage)
	}
}

func TestGenerateNoFallback(t *testing.T) {
	for name, tt := range map[string]struct {
		primary   agenttest.Step
		ctxCancel bool
		wantText  string
		wantErr   error
	}{
		"text already streamed": {agenttest.Step{Text: "Half an ans", Err: unavailable(502)}, false, "Half an ans", agent.ErrUnavailable},
		"bad request":           {agenttest.Fail(errors.New("HTTP 400: bad")), false, "", nil},
		"caller cancelled":      {agenttest.Fail(fmt.Errorf("x: %w: %w", context.Canceled, agent.ErrUnavailable)), true, "", context.Canceled},
	} {
		primary := agenttest.NewScriptedModel(tt.primary)
		fallback := agenttest.NewScriptedModel(agenttest.Reply("second answer"))
		l := &ledger{}
		r, err := New(Config{Routes: []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}}, OnUsage: l.report},
			map[string]agent.Model{"strong": primary, "light": fallback}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if tt.ctxCancel {
			cancel()
		}
		var text strings.Builder
		resp, err := r.Generate(ctx, userReq("hi"), collect(&text))
		cancel()
		if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
			t.Errorf("%s: Generate error = %v, want one wrapping %v", name, err, tt.wantErr)
		}
		if fallback.Calls() != 0 || text.String() != tt.wantText {
			t.Errorf("%s: fallback calls = %d, text %q, want 0, %q (never two answers)", name, fallback.Calls(), text.String(), tt.wantText)
		}
		if resp.Model != "strong" || !resp.Usage.Failed || len(l.entries()) != 0 {
			t.Errorf("%s: Response = model %q failed %v, OnUsage got %d, want strong, failed, 0 (the caller reports it)", name, resp.Model, resp.Usage.Failed, len(l.entries()))
		}
		if st := r.Breakers()[0]; st.Model == "strong" && st.Failures != 0 && name != "text already streamed" {
			t.Errorf("%s: strong breaker failures = %d, want 0 (not the model's fault)", name, st.Failures)
		}
	}
}

func TestGenerateEveryModelFails(t *testing.T) {
	strong := agenttest.NewScriptedModel(agenttest.Fail(unavailable(500)))
	light := agenttest.NewScriptedModel(agenttest.Fail(&echogate.RetryAfterError{After: time.Minute, Err: unavailable(429)}))
	l := &ledger{}
	r, err := New(Config{Routes: []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}}, OnUsage: l.report},
		map[string]agent.Model{"strong": strong, "light": light}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Generate(context.Background(), userReq("hi"), nil)
	if !errors.Is(err, agent.ErrUnavailable) {
		t.Fatalf("Generate = %v, want an error wrapping ErrUnavailable", err)
	}
	if _, ok := echogate.RetryAfter(err); !ok {
		t.Errorf("Generate error %v lost the RetryAfterError of the last attempt", err)
	}
	if resp.Model != "light" || resp.RouteReason != "route main: default; fallback after strong: 500; light failed: 429" {
		t.Errorf("Response = %q, %q, want light with both failures in the reason", resp.Model, resp.RouteReason)
	}
	if got := l.entries(); len(got) != 1 || got[0].Model != "strong" || !got[0].Failed {
		t.Errorf("OnUsage = %+v, want only the strong attempt (the last one is the caller's)", got)
	}
}

func TestRequestUsageReporterWins(t *testing.T) {
	strong := agenttest.NewScriptedModel(agenttest.Fail(unavailable(500)))
	light := agenttest.NewScriptedModel(agenttest.Reply("ok"))
	global, turn := &ledger{}, &ledger{}
	r, err := New(Config{Routes: []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}}, OnUsage: global.report},
		map[string]agent.Model{"strong": strong, "light": light}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := userReq("hi")
	req.ReportUsage = turn.report
	if _, err := r.Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if len(global.entries()) != 0 || len(turn.entries()) != 1 {
		t.Errorf("global, turn reporter got %d, %d entries, want 0, 1", len(global.entries()), len(turn.entries()))
	}
}

func TestBreakerSkipsOpenModel(t *testing.T) {
	strong := agenttest.NewScriptedModel()
	strong.SetDefault(agenttest.Fail(unavailable(503)))
	light := agenttest.NewScriptedModel()
	light.SetDefault(agenttest.Reply("ok"))
	var mu sync.Mutex
	var changes []string
	r, err := New(Config{
		Routes:  []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}},
		Breaker: BreakerConfig{Failures: 2, CoolDown: time.Hour},
		OnUsage: func(echogate.Usage) {},
		OnState: func(model, from, to string) {
			mu.Lock()
			changes = append(changes, model+":"+from+"->"+to)
			mu.Unlock()
		},
	}, map[string]agent.Model{"strong": strong, "light": light}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		resp, err := r.Generate(context.Background(), userReq("hi"), nil)
		if err != nil || resp.Model != "light" {
			t.Fatalf("call %d: Generate = %q, %v, want light answering", i+1, resp.Model, err)
		}
		if i >= 2 && !strings.Contains(resp.RouteReason, "skipped strong: breaker open") {
			t.Errorf("call %d: reason = %q, want the skip named", i+1, resp.RouteReason)
		}
	}
	if strong.Calls() != 2 {
		t.Errorf("strong calls = %d, want 2 (skipped once its breaker opened)", strong.Calls())
	}
	st := r.Breakers()
	if st[1].Model != "strong" || st[1].State != StateOpen || st[1].Skipped != 2 || st[1].Failures != 2 || !strings.Contains(st[1].LastError, "503") {
		t.Errorf("Breakers()[1] = %+v, want strong open, 2 failures, 2 skipped, last error 503", st[1])
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(changes, ",") != "strong:closed->open" {
		t.Errorf("OnState calls = %v, want [strong:closed->open]", changes)
	}
}

func TestEveryBreakerOpen(t *testing.T) {
	m := agenttest.NewScriptedModel()
	m.SetDefault(agenttest.Fail(unavailable(500)))
	r, err := New(Config{Breaker: BreakerConfig{Failures: 1, CoolDown: time.Hour}}, map[string]agent.Model{"light": m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Generate(context.Background(), userReq("hi"), nil); !errors.Is(err, agent.ErrUnavailable) {
		t.Fatalf("first Generate = %v, want unavailable", err)
	}
	resp, err := r.Generate(context.Background(), userReq("hi"), nil)
	if !errors.Is(err, ErrBreakerOpen) || !errors.Is(err, agent.ErrUnavailable) {
		t.Errorf("Generate with open breaker = %v, want ErrBreakerOpen wrapping ErrUnavailable", err)
	}
	if m.Calls() != 1 || resp.Model != "light" || !resp.Usage.Failed || resp.Usage.InputTokens != 0 {
		t.Errorf("calls %d, resp %+v, want 1 call and a failed zero usage for light", m.Calls(), resp)
	}
}

func TestConcurrentGenerate(t *testing.T) {
	strong := agenttest.NewScriptedModel()
	strong.SetDefault(agenttest.Fail(unavailable(503)))
	light := agenttest.NewScriptedModel()
	light.SetDefault(agenttest.Reply("ok"))
	l := &ledger{}
	r, err := New(Config{Routes: []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}}, OnUsage: l.report},
		map[string]agent.Model{"strong": strong, "light": light}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Generate(context.Background(), userReq("hi"), nil); err != nil {
				t.Error(err)
			}
			_ = r.Breakers()
		}()
	}
	wg.Wait()
	if strong.Calls()+int(r.Breakers()[1].Skipped) != 16 || len(l.entries()) != strong.Calls() {
		t.Errorf("strong calls %d + skipped %d, ledger %d: want 16 in all and one ledger entry per strong call",
			strong.Calls(), r.Breakers()[1].Skipped, len(l.entries()))
	}
}
