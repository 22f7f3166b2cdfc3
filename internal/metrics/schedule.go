package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scheduleCollectors are scheduled work's (SPEC "Scheduled work").
type scheduleCollectors struct {
	ScheduleRuns *prometheus.CounterVec // job, outcome
	ScheduleLag  prometheus.Histogram   // how late slots were submitted
}

func (m *Metrics) registerSchedule(r *prometheus.Registry) {
	m.ScheduleRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_schedule_runs_total",
		Help: "Finished scheduled runs by job and outcome (skipped, delivered, quiet, failed, unconfirmed, budget, denied)."}, []string{"job", "outcome"})
	m.ScheduleLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "echogate_schedule_lag_seconds",
		Help: "How late a scheduled slot was submitted after its scheduled time.", Buckets: []float64{.1, .5, 1, 5, 15, 60, 300, 900, 3600}})
	r.MustRegister(m.ScheduleRuns, m.ScheduleLag)
}

// ScheduleRun counts one finished run of job.
func (m *Metrics) ScheduleRun(job, outcome string) {
	if m != nil {
		m.ScheduleRuns.WithLabelValues(job, outcome).Inc()
	}
}

// ScheduleLagged observes how late a slot was submitted.
func (m *Metrics) ScheduleLagged(d time.Duration) {
	if m != nil {
		m.ScheduleLag.Observe(max(d, 0).Seconds())
	}
}
