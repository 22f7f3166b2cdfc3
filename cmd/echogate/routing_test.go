package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/storage/sqlite"
)

func writeConfigIn(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "echogate.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ledger(t *testing.T, dir string) []echogate.UsageRecord {
	t.Helper()
	st, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "echogate.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ListUsage(context.Background(), echogate.UsageFilter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func chatOnce(t *testing.T, dir, cfg, text string, extra ...string) (int, string, string) {
	t.Helper()
	args := append([]string{"--config", cfg, "chat", "-m", text}, extra...)
	e, out, errb := testEnv(map[string]string{"ECHOGATE_DATA_DIR": dir}, args...)
	code := run(context.Background(), e)
	return code, out.String(), errb.String()
}

// TestRoutingAndFallback: a short question goes to the light model, a long code question to the
// strong one; the strong model failing with 500 falls back to the light one, and both attempts
// are in the ledger, the failed one at zero cost.
func TestRoutingAndFallback(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{})
	defer fake.Close()
	dir := t.TempDir()
	cfg := writeConfigIn(t, dir, fmt.Sprintf(`
models:
  default: light-model
  providers: [{name: fake, base_url: %q, api_key: k, models: [light-model, strong-model], max_retries: -1}]
  routes:
    - {name: code, when: code, model: strong-model, fallback: [light-model]}
    - {name: main, when: default, model: light-model}
  prices:
    light-model: {input_per_mtok: 1, output_per_mtok: 2}
    strong-model: {input_per_mtok: 10, output_per_mtok: 20}
`, fake.URL()))

	fake.Enqueue(agenttest.Answer{Text: "Paris.", PromptTokens: 100, CompletionTokens: 10})
	if code, out, errb := chatOnce(t, dir, cfg, "capital of France?"); code != 0 || strings.TrimSpace(out) != "Paris." {
		t.Fatalf("short question: exit %d, out %q, log %s", code, out, errb)
	}
	if got := fake.ChatRequests()[0].Model; got != "light-model" {
		t.Errorf("short question went to %s, want light-model", got)
	}

	code := "Why does this fail?\n```go\nfunc main() {\n\tvar m map[string]int\n\tm[\"a\"] = 1\n}\n```\n" + strings.Repeat("It panics at runtime. ", 20)
	fake.Enqueue(agenttest.StatusAnswer(500), agenttest.Answer{Text: "The map is nil.", PromptTokens: 200, CompletionTokens: 20})
	if code, out, errb := chatOnce(t, dir, cfg, code); code != 0 || strings.TrimSpace(out) != "The map is nil." {
		t.Fatalf("code question: exit %d, out %q, log %s", code, out, errb)
	}
	reqs := fake.ChatRequests()
	if len(reqs) != 3 || reqs[1].Model != "strong-model" || reqs[2].Model != "light-model" {
		var models []string
		for _, r := range reqs {
			models = append(models, r.Model)
		}
		t.Fatalf("requests went to %v, want [light-model strong-model light-model]", models)
	}
	recs := ledger(t, dir)
	if len(recs) != 3 {
		t.Fatalf("ledger has %d entries, want 3 (one turn of one call, one turn of a failed and a fallback call)", len(recs))
	}
	byModel := map[string]echogate.UsageRecord{}
	for _, r := range recs {
		byModel[fmt.Sprintf("%s %v", r.Usage.Model, r.Usage.Failed)] = r
	}
	failed, ok := byModel["strong-model true"]
	if !ok || failed.Usage.CostUSD != 0 || failed.Turn == "" {
		t.Errorf("failed attempt entry = %+v, want strong-model, failed, zero cost, attributed to the turn", failed)
	}
	var fb echogate.UsageRecord
	for _, r := range recs {
		if r.Turn == failed.Turn && !r.Usage.Failed {
			fb = r
		}
	}
	if want := (200*1.0 + 20*2.0) / 1e6; fb.Usage.InputTokens != 200 || fb.Usage.CostUSD < want*0.999 || fb.Usage.CostUSD > want*1.001 {
		t.Errorf("fallback entry = %+v, want 200 input tokens at $%g", fb.Usage, want)
	}
	if failed.Turn != fb.Turn {
		t.Errorf("the failed and the fallback attempt belong to turns %s and %s, want one turn", failed.Turn, fb.Turn)
	}
}

// TestDailyBudgetStopsThirdTurn: a per-user daily budget of $0.01 stops the third turn before the
// model is called, with a message naming the limit.
func TestDailyBudgetStopsThirdTurn(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{})
	defer fake.Close()
	fake.Respond(func(agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.Answer{Text: "ok", PromptTokens: 800, CompletionTokens: 200}, true // $0.005 a turn
	})
	dir := t.TempDir()
	cfg := writeConfigIn(t, dir, fmt.Sprintf(`
models:
  default: m
  providers: [{name: fake, base_url: %q, api_key: k}]
  prices: {m: {input_per_mtok: 5, output_per_mtok: 5}}
agent: {max_tokens: 10}
budgets: {per_user_day_usd: 0.01}
`, fake.URL()))
	for i := 1; i <= 2; i++ {
		if code, out, errb := chatOnce(t, dir, cfg, fmt.Sprintf("question %d", i), "--user", "ann"); code != 0 || strings.TrimSpace(out) != "ok" {
			t.Fatalf("turn %d: exit %d, out %q, log %s", i, code, out, errb)
		}
	}
	_, out, errb := chatOnce(t, dir, cfg, "question 3", "--user", "ann")
	if n := len(fake.ChatRequests()); n != 2 {
		t.Errorf("model called %d times, want 2: the third turn must stop before calling it", n)
	}
	if text := out + errb; !strings.Contains(text, "daily budget of $0.01") || !strings.Contains(text, "resets") {
		t.Errorf("third turn output %q / %q, want the limit and its reset named", out, errb)
	}
	// Another user still has budget.
	if code, out, _ := chatOnce(t, dir, cfg, "question", "--user", "bob"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("another user: exit %d, out %q", code, out)
	}
}
