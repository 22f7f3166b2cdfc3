package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stageCollectors time and count the turn's stages. The pipeline records them from one stage
// decorator, never from inside a stage. Every label is bounded: stage is one of context,
// inference, response; channel a platform name; agent a configured agent profile; outcome one
// of ok, error, paused, stopped.
type stageCollectors struct {
	StageSeconds *prometheus.HistogramVec // stage, channel, agent
	StageRuns    *prometheus.CounterVec   // stage, channel, agent, outcome
	// RefusedTransitions counts the moves the turn's lifecycle refused (from, to: state names,
	// ten of them). Each failed its turn; any at all is a pipeline bug.
	RefusedTransitions *prometheus.CounterVec
}

func (m *Metrics) registerStages(r *prometheus.Registry) {
	m.StageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "echogate_stage_duration_seconds",
		Help:    "Duration of one stage of a turn (context, inference, response), by channel and agent profile.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}},
		[]string{"stage", "channel", "agent"})
	m.StageRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_stage_runs_total",
		Help: "Stages run, by stage, channel, agent profile and outcome (ok, error, paused, stopped)."},
		[]string{"stage", "channel", "agent", "outcome"})
	m.RefusedTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_turn_refused_transitions_total",
		Help: "Turn lifecycle transitions refused by the state machine, by from and to state; each failed its turn (a pipeline bug)."},
		[]string{"from", "to"})
	r.MustRegister(m.StageSeconds, m.StageRuns, m.RefusedTransitions)
}

// RefusedTransition counts a lifecycle move from → to that the state machine refused.
func (m *Metrics) RefusedTransition(from, to string) {
	if m != nil {
		m.RefusedTransitions.WithLabelValues(from, to).Inc()
	}
}

// Stage records one run of a turn's stage: how long it took and how it ended.
func (m *Metrics) Stage(stage, channel, agent, outcome string, d time.Duration) {
	if m != nil {
		m.StageSeconds.WithLabelValues(stage, channel, agent).Observe(d.Seconds())
		m.StageRuns.WithLabelValues(stage, channel, agent, outcome).Inc()
	}
}
