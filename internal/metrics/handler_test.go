package metrics

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads m's exposition back with the Prometheus text parser, as a scraper would.
func parse(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("the Prometheus parser rejects /metrics: %v\n%s", err, buf.String())
	}
	return fams
}

func TestHandlerServesUncompressed(t *testing.T) {
	m := New()
	m.Event("web", "direct")
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	m.Handler().ServeHTTP(rec, req)
	if got := rec.Header().Get("Content-Encoding"); got != "" {
		t.Errorf("Content-Encoding = %q, want none", got)
	}
	if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q, want the text format 0.0.4", got)
	}
	if body := rec.Body.String(); !strings.Contains(body, `echogate_events_total{channel="web",kind="direct"} 1`+"\n") {
		t.Errorf("body lacks the counter:\n%.500s", body)
	}
}

// Every family parses, with the kind, labels and values the gateway recorded.
func TestExpositionParses(t *testing.T) {
	m := New()
	m.Turn("web", "done", 30*time.Millisecond)
	m.Turn("web", "done", 2*time.Second)
	m.Turn("slack", "error", 200*time.Hour) // beyond the last bucket: only +Inf
	m.ModelCall(`we"ird\model`+"\n", false, 10, 5, 2, 0.25, "model")
	m.Breaker("openai", "model", "open")
	m.Mailbox(3, 1)
	m.ApprovalDecided("approve", 20*time.Second)
	fams := parse(t, m)

	for name, want := range map[string]dto.MetricType{
		"echogate_turns_total": dto.MetricType_COUNTER, "echogate_turn_duration_seconds": dto.MetricType_HISTOGRAM,
		"echogate_breaker_state": dto.MetricType_GAUGE, "echogate_mailbox_depth": dto.MetricType_GAUGE,
		"echogate_approval_wait_seconds": dto.MetricType_HISTOGRAM, "go_goroutines": dto.MetricType_GAUGE,
		"go_memstats_heap_inuse_bytes": dto.MetricType_GAUGE, "go_gc_duration_seconds": dto.MetricType_SUMMARY,
		"process_resident_memory_bytes": dto.MetricType_GAUGE, "process_cpu_seconds_total": dto.MetricType_COUNTER,
	} {
		if f := fams[name]; f == nil || f.GetType() != want {
			t.Errorf("family %s: %v, want type %v", name, f, want)
		}
	}
	if got := fams["process_resident_memory_bytes"].GetMetric()[0].GetGauge().GetValue(); got < 1<<20 {
		t.Errorf("process_resident_memory_bytes = %v, want this process's RSS", got)
	}
	for _, s := range fams["echogate_turn_duration_seconds"].GetMetric() {
		h, status := s.GetHistogram(), s.GetLabel()[1].GetValue()
		wantCount, wantSum, wantUnder1 := uint64(2), 2.03, uint64(1)
		if status == "error" {
			wantCount, wantSum, wantUnder1 = 1, 720000, 0
		}
		var under1 uint64
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == 1 {
				under1 = b.GetCumulativeCount()
			}
		}
		if h.GetSampleCount() != wantCount || math.Abs(h.GetSampleSum()-wantSum) > 1e-9 || under1 != wantUnder1 {
			t.Errorf("turn_duration{status=%s}: count %d, sum %v, ≤1s %d; want %d, %v, %d",
				status, h.GetSampleCount(), h.GetSampleSum(), under1, wantCount, wantSum, wantUnder1)
		}
	}
	toks := fams["echogate_model_tokens_total"].GetMetric()
	if len(toks) != 3 || toks[0].GetLabel()[1].GetName() != "model" || toks[0].GetLabel()[1].GetValue() != `we"ird\model`+"\n" {
		t.Errorf("model_tokens_total = %v, want 3 series of the escaped model name", toks)
	}
	if got := fams["echogate_breaker_state"].GetMetric()[0].GetGauge().GetValue(); got != 2 {
		t.Errorf("breaker_state = %v, want 2 (open)", got)
	}
	if _, ok := fams["echogate_tool_calls_total"]; ok {
		t.Error("a vector without series is exposed; want it left out (as Prometheus clients do)")
	}
}

// Labels are exposed sorted by name, as Prometheus clients do (tests and dashboards match
// whole lines), whatever order the family declares them in.
func TestLabelsSortedByName(t *testing.T) {
	m := New()
	m.Stage("inference", "web", "default", "ok", time.Second)
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `echogate_stage_runs_total{agent="default",channel="web",outcome="ok",stage="inference"} 1` + "\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("exposition lacks %q", want)
	}
	if s := m.Samples("echogate_stage_runs_total"); len(s) != 1 || s[0].Label("stage") != "inference" || s[0].Label("agent") != "default" {
		t.Errorf("Samples = %+v, want the values under their own names", s)
	}
}

func TestSamples(t *testing.T) {
	m := New()
	m.Stage("context", "web", "default", "ok", 1500*time.Millisecond)
	s := m.Samples("echogate_stage_duration_seconds")
	if len(s) != 1 || s[0].Count != 1 || s[0].Sum != 1.5 || s[0].Label("stage") != "context" || s[0].Label("nope") != "" {
		t.Errorf("Samples(stage_duration) = %+v, want one series of 1 observation summing 1.5 with stage=context", s)
	}
	if s := m.Samples("no_such_family"); s != nil {
		t.Errorf("Samples(unknown) = %v, want none", s)
	}
}

// Counters and histograms count every concurrent update once (run with -race).
func TestConcurrentUpdates(t *testing.T) {
	m := New()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				m.Event("web", "direct")
				m.TimeToFirstToken("web", time.Millisecond)
				m.Mailbox(1, 0)
			}
		}()
	}
	wg.Wait()
	ev, ttft, depth := m.Samples("echogate_events_total"), m.Samples("echogate_time_to_first_token_seconds"), m.Samples("echogate_mailbox_depth")
	if ev[0].Value != 8000 || ttft[0].Count != 8000 || depth[0].Value != 8000 {
		t.Errorf("after 8×1000 updates: events %v, ttft count %d, mailbox depth %v; want 8000 each", ev[0].Value, ttft[0].Count, depth[0].Value)
	}
}

func TestLabelCountMismatch(t *testing.T) {
	m := New()
	m.Turns.WithLabelValues("web").Inc()                  // one value short
	m.Turns.WithLabelValues("web", "done", "extra").Inc() // one too many
	fams := parse(t, m)
	got := map[string]float64{}
	for _, s := range fams["echogate_turns_total"].GetMetric() {
		got[s.GetLabel()[0].GetValue()+"/"+s.GetLabel()[1].GetValue()] = s.GetCounter().GetValue()
	}
	if len(got) != 2 || got["web/"] != 1 || got["web/done"] != 1 {
		t.Errorf("series = %v, want web/ and web/done counted once each", got)
	}
}
