package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/metrics"
)

// TestMeteredStageRecordsWhatTheStageDid runs a fake stage under the metrics decorator and
// reads back, from the registry /metrics serves, the run's count (by outcome) and duration.
func TestMeteredStageRecordsWhatTheStageDid(t *testing.T) {
	for name, tt := range map[string]struct {
		stage   string
		err     error
		status  agent.Status
		outcome string
	}{
		"context ok":         {stageContext, nil, "", "ok"},
		"context failed":     {stageContext, errors.New("history: store down"), "", "error"},
		"inference answered": {stageInference, nil, agent.StatusDone, "ok"},
		"inference paused":   {stageInference, nil, agent.StatusPaused, "paused"},
		"inference stopped":  {stageInference, nil, agent.StatusAborted, "stopped"},
		"model failed":       {stageInference, nil, agent.StatusError, "error"},
		"response posted":    {stageResponse, nil, agent.StatusDone, "ok"},
		"not delivered":      {stageResponse, errors.New("post answer: 500"), agent.StatusDone, "error"},
	} {
		m := metrics.New()
		clock := time.Unix(1_700_000_000, 0)
		now := func() time.Time { return clock }
		fake := StageFunc(func(ctx context.Context, tu *Turn) error {
			clock = clock.Add(1500 * time.Millisecond) // the stage takes 1.5 s
			tu.res.Status = tt.status
			return tt.err
		})
		tu := &Turn{ev: echogate.InboundEvent{Conversation: echogate.ConversationRef{Platform: "slack"}},
			prof: &profile{Profile: Profile{Name: "oncall"}}}
		if err := metered(m, now, tt.stage, fake).Process(context.Background(), tu); !errors.Is(err, tt.err) {
			t.Errorf("%s: metered(…).Process = %v, want the stage's own %v", name, err, tt.err)
		}
		labels := map[string]string{"stage": tt.stage, "channel": "slack", "agent": "oncall", "outcome": tt.outcome}
		if got := sample(t, m, "echogate_stage_runs_total", labels).GetCounter().GetValue(); got != 1 {
			t.Errorf("%s: echogate_stage_runs_total%v = %v, want 1", name, labels, got)
		}
		delete(labels, "outcome")
		h := sample(t, m, "echogate_stage_duration_seconds", labels).GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != 1.5 {
			t.Errorf("%s: echogate_stage_duration_seconds%v = %d samples, sum %v; want 1 sample of 1.5 s",
				name, labels, h.GetSampleCount(), h.GetSampleSum())
		}
		if n := series(t, m, "echogate_stage_runs_total"); n != 1 {
			t.Errorf("%s: echogate_stage_runs_total has %d series, want 1 (one run)", name, n)
		}
	}
}

// TestCountedTurnsCountsTheTurnOnceItEnded checks the turn counters the decorator around the
// ResponseStage records from the turn's final record.
func TestCountedTurnsCountsTheTurnOnceItEnded(t *testing.T) {
	m := metrics.New()
	start := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return start.Add(4 * time.Second) }
	tu := &Turn{ev: echogate.InboundEvent{Conversation: echogate.ConversationRef{Platform: "discord"}},
		prof: &profile{Profile: Profile{Name: "support"}}, start: start}
	end := StageFunc(func(ctx context.Context, tu *Turn) error { tu.rec.Status = echogate.TurnFailed; return nil })
	if err := countedTurns(m, now, end).Process(context.Background(), tu); err != nil {
		t.Fatal(err)
	}
	if got := sample(t, m, "echogate_turns_total", map[string]string{"channel": "discord", "status": "error"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("echogate_turns_total{discord,error} = %v, want 1", got)
	}
	if got := sample(t, m, "echogate_turn_duration_seconds", map[string]string{"channel": "discord", "status": "error"}).GetHistogram().GetSampleSum(); got != 4 {
		t.Errorf("echogate_turn_duration_seconds{discord,error} sum = %v, want 4", got)
	}
	if got := sample(t, m, "echogate_agent_turns_total", map[string]string{"agent": "support", "status": "error"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("echogate_agent_turns_total{support,error} = %v, want 1", got)
	}
}

// TestUnmeteredWithoutMetrics: without a Metrics the decorators return the stage itself.
func TestUnmeteredWithoutMetrics(t *testing.T) {
	s := &ContextStage{}
	if got := metered(nil, time.Now, stageContext, s); got != Stage(s) {
		t.Errorf("metered(nil, …) = %T, want the stage unwrapped", got)
	}
	if got := countedTurns(nil, time.Now, s); got != Stage(s) {
		t.Errorf("countedTurns(nil, …) = %T, want the stage unwrapped", got)
	}
}

// sample is the metric of family name whose labels are exactly want.
func sample(t *testing.T, m *metrics.Metrics, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, s := range f.GetMetric() {
			if len(s.GetLabel()) != len(want) {
				continue
			}
			for _, l := range s.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return s
		}
	}
	t.Errorf("no %s%v in the registry", name, want)
	return &dto.Metric{}
}

// series is how many label sets family name has.
func series(t *testing.T, m *metrics.Metrics, name string) int {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}
