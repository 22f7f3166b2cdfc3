package metrics

import "time"

// stageCollectors time and count the turn's stages. The pipeline records them from one stage
// decorator, never from inside a stage. Every label is bounded: stage is one of context,
// inference, response; channel a platform name; agent a configured agent profile; outcome one
// of ok, error, paused, stopped.
type stageCollectors struct {
	StageSeconds *HistogramVec // stage, channel, agent
	StageRuns    *CounterVec   // stage, channel, agent, outcome
}

func (m *Metrics) registerStages(r *registry) {
	m.StageSeconds = r.histogramVec("echogate_stage_duration_seconds",
		"Duration of one stage of a turn (context, inference, response), by channel and agent profile.",
		[]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		"stage", "channel", "agent")
	m.StageRuns = r.counterVec("echogate_stage_runs_total",
		"Stages run, by stage, channel, agent profile and outcome (ok, error, paused, stopped).",
		"stage", "channel", "agent", "outcome")
}

// Stage records one run of a turn's stage: how long it took and how it ended.
func (m *Metrics) Stage(stage, channel, agent, outcome string, d time.Duration) {
	if m != nil {
		m.StageSeconds.WithLabelValues(stage, channel, agent).Observe(d.Seconds())
		m.StageRuns.WithLabelValues(stage, channel, agent, outcome).Inc()
	}
}
