package router

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/provider/openai"
)

// Wire tests: the router in front of real openai providers (go-openai) talking to the
// OpenAI-wire fake over loopback.

func provider(t *testing.T, f *agenttest.FakeOpenAI) *openai.Provider {
	t.Helper()
	p, err := openai.New(openai.Config{BaseURL: f.URL(), APIKey: "sk-test", MaxRetries: -1, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func modelsOf(reqs []agenttest.ChatRequest) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Model)
	}
	return out
}

func runTurn(r agent.Model, l *ledger, text string) agent.Result {
	return agent.Run(context.Background(),
		agent.Input{System: "You are a bot.", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: text}}},
		agent.Runtime{Model: r, Params: agent.Params{Model: "light"}, ReportUsage: l.report})
}

func TestWireRoutesLightAndStrong(t *testing.T) {
	f := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test", Models: []string{"light", "strong"},
		Default: &agenttest.Answer{Text: "answer", PromptTokens: 50, CompletionTokens: 5}})
	defer f.Close()
	p := provider(t, f)
	l := &ledger{prices: prices}
	r, err := New(Config{Routes: []Route{
		{Name: "code", When: RuleCode, Model: "strong", Fallback: []string{"light"}},
		{Name: "long", When: RuleLong, Model: "strong", Fallback: []string{"light"}},
		{Name: "light", Model: "light", Fallback: []string{"strong"}},
	}, OnUsage: l.report}, map[string]agent.Model{"light": p, "strong": p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	short := runTurn(r, l, "What's the capital of France?")
	long := runTurn(r, l, "Please review this handler, it leaks goroutines:\n```go\n"+strings.Repeat("func h() { go work() }\n", 100)+"```")
	if short.Status != agent.StatusDone || long.Status != agent.StatusDone {
		t.Fatalf("Run statuses = %s (%v), %s (%v), want done", short.Status, short.Err, long.Status, long.Err)
	}
	if got := modelsOf(f.ChatRequests()); strings.Join(got, ",") != "light,strong" {
		t.Errorf("models requested = %v, want [light strong]", got)
	}
	if short.Model != "light" || short.RouteReason != "route light: default" {
		t.Errorf("short question: model %q reason %q, want light, \"route light: default\"", short.Model, short.RouteReason)
	}
	if long.Model != "strong" || long.RouteReason != "route code: fenced code block" {
		t.Errorf("long code question: model %q reason %q, want strong, \"route code: fenced code block\"", long.Model, long.RouteReason)
	}
	got := l.entries()
	if len(got) != 2 || got[0].Model != "light" || got[1].Model != "strong" || got[1].InputTokens != 50 || got[1].CostUSD != prices.Price(got[1]) {
		t.Errorf("ledger = %+v, want one priced entry per turn (light, strong)", got)
	}
}

func TestWireFallbackOn500And429(t *testing.T) {
	primary := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test"})
	defer primary.Close()
	backup := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test",
		Default: &agenttest.Answer{Text: "The answer is 42.", PromptTokens: 120, CompletionTokens: 8}})
	defer backup.Close()
	primary.Enqueue(agenttest.StatusAnswer(http.StatusInternalServerError), agenttest.RateLimited(time.Minute))

	l := &ledger{prices: prices}
	r, err := New(Config{Routes: []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}}, OnUsage: l.report},
		map[string]agent.Model{"strong": provider(t, primary), "light": provider(t, backup)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"500", "429"} {
		res := runTurn(r, l, "what is the answer?")
		if res.Status != agent.StatusDone || res.Answer != "The answer is 42." {
			t.Fatalf("turn %d: Run = %s %q (%v), want the backup's answer", i+1, res.Status, res.Answer, res.Err)
		}
		if wantReason := "route main: default; fallback after strong: " + want; res.Model != "light" || res.RouteReason != wantReason {
			t.Errorf("turn %d: model %q reason %q, want light, %q", i+1, res.Model, res.RouteReason, wantReason)
		}
	}
	if n, m := len(primary.ChatRequests()), len(backup.ChatRequests()); n != 2 || m != 2 {
		t.Errorf("requests primary, backup = %d, %d, want 2, 2", n, m)
	}
	got := l.entries()
	if len(got) != 4 {
		t.Fatalf("ledger = %+v, want 4 entries (2 turns × failed primary + backup)", got)
	}
	for i := 0; i < 4; i += 2 {
		failed, ok := got[i], got[i+1]
		if failed.Model != "strong" || !failed.Failed || failed.InputTokens != 0 || failed.OutputTokens != 0 || failed.CostUSD != 0 {
			t.Errorf("ledger[%d] = %+v, want strong, failed, zero usage and cost", i, failed)
		}
		if ok.Model != "light" || ok.Failed || ok.InputTokens != 120 || ok.OutputTokens != 8 || ok.CostUSD != prices.Price(ok) || ok.CostUSD == 0 {
			t.Errorf("ledger[%d] = %+v, want light with its real usage 120/8, priced", i+1, ok)
		}
	}
}

func TestWireBreakerOpensAndProbes(t *testing.T) {
	var mu sync.Mutex
	healthy := false
	primary := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test"})
	defer primary.Close()
	primary.Respond(func(agenttest.ChatRequest) (agenttest.Answer, bool) {
		mu.Lock()
		defer mu.Unlock()
		if healthy {
			return agenttest.TextAnswer("primary is back"), true
		}
		return agenttest.StatusAnswer(http.StatusBadGateway), true
	})
	backup := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test", Default: &agenttest.Answer{Text: "backup"}})
	defer backup.Close()

	var states []string
	var smu sync.Mutex
	const coolDown = time.Minute
	var cmu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { cmu.Lock(); defer cmu.Unlock(); return now }
	r, err := New(Config{
		Routes:  []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}},
		Breaker: BreakerConfig{Failures: 2, CoolDown: coolDown},
		Clock:   clock,
		OnUsage: func(echogate.Usage) {},
		OnState: func(model, from, to string) {
			smu.Lock()
			states = append(states, model+":"+to)
			smu.Unlock()
		},
	}, map[string]agent.Model{"strong": provider(t, primary), "light": provider(t, backup)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gen := func() agent.Response {
		t.Helper()
		resp, err := r.Generate(context.Background(), userReq("hi"), nil)
		if err != nil {
			t.Fatalf("Generate = %v, want an answer", err)
		}
		return resp
	}
	gen()
	gen()
	if n := len(primary.ChatRequests()); n != 2 {
		t.Fatalf("primary requests = %d, want 2", n)
	}
	strongStatus := func() BreakerStatus {
		for _, s := range r.Breakers() {
			if s.Model == "strong" {
				return s
			}
		}
		t.Fatal("no breaker for strong")
		return BreakerStatus{}
	}
	if st := strongStatus(); st.State != StateOpen {
		t.Fatalf("strong breaker = %+v, want open after 2 failures", st)
	}
	resp := gen()
	if n := len(primary.ChatRequests()); n != 2 || resp.Model != "light" || !strings.Contains(resp.RouteReason, "skipped strong: breaker open") {
		t.Errorf("with the breaker open: primary requests %d, model %q, reason %q; want 2 (no request), light, the skip named",
			n, resp.Model, resp.RouteReason)
	}

	// The cool-down runs on Config.Clock: a second before its end the breaker is still open.
	mu.Lock()
	healthy = true
	mu.Unlock()
	cmu.Lock()
	now = now.Add(coolDown - time.Second)
	cmu.Unlock()
	if st := strongStatus(); st.State != StateOpen {
		t.Fatalf("strong breaker a second before the cool-down ends = %+v, want open", st)
	}
	cmu.Lock()
	now = now.Add(time.Second)
	cmu.Unlock()
	if st := strongStatus(); st.State != StateHalfOpen {
		t.Fatalf("strong breaker after the %s cool-down = %+v, want half-open", coolDown, st)
	}
	resp = gen()
	if resp.Model != "strong" || resp.Message.Content != "primary is back" || len(primary.ChatRequests()) != 3 {
		t.Errorf("probe: model %q answer %q, primary requests %d; want strong, \"primary is back\", 3", resp.Model, resp.Message.Content, len(primary.ChatRequests()))
	}
	if st := strongStatus(); st.State != StateClosed || st.Failures != 2 {
		t.Errorf("after the probe: %+v, want closed with 2 failures in total", st)
	}
	smu.Lock()
	defer smu.Unlock()
	if got := strings.Join(states, ","); got != "strong:open,strong:half-open,strong:closed" {
		t.Errorf("state changes = %s, want strong:open,strong:half-open,strong:closed", got)
	}
}

func TestWireNoFallbackAfterStreamBroke(t *testing.T) {
	primary := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test"})
	defer primary.Close()
	primary.Enqueue(agenttest.Answer{Text: "The first half of an answer that", FragmentSize: 4, Drop: true, DropAfter: 4})
	backup := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test", Default: &agenttest.Answer{Text: "second answer"}})
	defer backup.Close()
	l := &ledger{}
	r, err := New(Config{Routes: []Route{{Name: "main", Model: "strong", Fallback: []string{"light"}}}, OnUsage: l.report},
		map[string]agent.Model{"strong": provider(t, primary), "light": provider(t, backup)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	resp, err := r.Generate(context.Background(), userReq("hi"), collect(&text))
	if err == nil {
		t.Fatal("Generate = nil error, want the broken stream's error")
	}
	if len(backup.ChatRequests()) != 0 || strings.Contains(text.String(), "second") || text.Len() == 0 {
		t.Errorf("backup requests %d, streamed %q: want no fallback after text was shown", len(backup.ChatRequests()), text.String())
	}
	if resp.Model != "strong" || !resp.Usage.Failed || len(l.entries()) != 0 {
		t.Errorf("resp model %q failed %v, OnUsage %d: want strong, failed, nothing reported by the router", resp.Model, resp.Usage.Failed, len(l.entries()))
	}
}
