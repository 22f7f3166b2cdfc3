// Package metrics holds the gateway's Prometheus collectors. One *Metrics is made per process by
// cmd and passed to the packages that count things; every method is safe on a nil *Metrics, so
// tests and tools that do not care pass nil.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics is the set of collectors, registered on its own registry.
type Metrics struct {
	Registry *prometheus.Registry

	EventsIn         *prometheus.CounterVec   // channel, kind
	Duplicates       *prometheus.CounterVec   // channel
	Rejected         *prometheus.CounterVec   // channel, reason
	MailboxDepth     prometheus.Gauge         // queued events over all sessions
	ActiveSessions   prometheus.Gauge         // sessions with a live mailbox
	Turns            *prometheus.CounterVec   // channel, status
	TurnSeconds      *prometheus.HistogramVec // channel, status
	FirstToken       *prometheus.HistogramVec // channel
	ModelCalls       *prometheus.CounterVec   // model, result
	Tokens           *prometheus.CounterVec   // model, direction (input|output|cached)
	SpendUSD         *prometheus.CounterVec   // model, kind
	ToolCalls        *prometheus.CounterVec   // tool, result (ok|error|denied|failed)
	ToolSeconds      *prometheus.HistogramVec // tool
	BreakerState     *prometheus.GaugeVec     // name, kind: 0 closed, 1 half-open, 2 open
	ApprovalsPending prometheus.Gauge
	ApprovalWait     prometheus.Histogram
	Approvals        *prometheus.CounterVec // decision
	PlatformLimited  *prometheus.CounterVec // channel (HTTP 429s from platforms)
	Reconnects       *prometheus.CounterVec // channel
	Degraded         prometheus.Counter     // echogate_degraded_total
	EmbeddingSkipped prometheus.Counter     // retrieval ran keyword-only (embedding breaker open)
	HistoryReads     *prometheus.CounterVec // source: cache (only newer entries read) | store (whole window read)
	AdapterPanics    *prometheus.CounterVec // channel, path: panics recovered in a platform adapter
	SkillLoads       *prometheus.CounterVec // skill, agent (skills.go)
	agentCollectors
	scheduleCollectors
	stageCollectors

	historyCached, historyLoaded prometheus.Counter
}

// New makes and registers every collector (plus the Go and process collectors).
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{Registry: r}
	m.EventsIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_events_total", Help: "Inbound events by channel and kind."}, []string{"channel", "kind"})
	m.Duplicates = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_events_duplicate_total", Help: "Inbound events dropped as duplicates."}, []string{"channel"})
	m.Rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_events_rejected_total", Help: "Inbound events refused (mailbox full, shutting down, invalid)."}, []string{"channel", "reason"})
	m.MailboxDepth = prometheus.NewGauge(prometheus.GaugeOpts{Name: "echogate_mailbox_depth", Help: "Events queued in session mailboxes."})
	m.ActiveSessions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "echogate_sessions_active", Help: "Sessions with a live mailbox."})
	m.Turns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_turns_total", Help: "Finished turns by channel and status."}, []string{"channel", "status"})
	m.TurnSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "echogate_turn_duration_seconds", Help: "Turn latency from dequeue to final reply.", Buckets: []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"channel", "status"})
	m.FirstToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "echogate_time_to_first_token_seconds", Help: "Time from dequeue to the first streamed token.", Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30}}, []string{"channel"})
	m.ModelCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_model_calls_total", Help: "Model calls by model and result."}, []string{"model", "result"})
	m.Tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_model_tokens_total", Help: "Tokens by model and direction."}, []string{"model", "direction"})
	m.SpendUSD = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_spend_usd_total", Help: "Spend in USD by model and usage kind."}, []string{"model", "kind"})
	m.ToolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_tool_calls_total", Help: "Tool calls by tool and result."}, []string{"tool", "result"})
	m.ToolSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "echogate_tool_duration_seconds", Help: "Tool call duration.", Buckets: prometheus.DefBuckets}, []string{"tool"})
	m.BreakerState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "echogate_breaker_state", Help: "Circuit breaker state: 0 closed, 1 half-open, 2 open."}, []string{"name", "kind"})
	m.ApprovalsPending = prometheus.NewGauge(prometheus.GaugeOpts{Name: "echogate_approvals_pending", Help: "Turns paused waiting for an approval or an answer."})
	m.ApprovalWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "echogate_approval_wait_seconds", Help: "Time from approval prompt to decision.", Buckets: []float64{1, 5, 15, 60, 300, 900, 3600, 14400, 86400}})
	m.Approvals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_approvals_total", Help: "Approval decisions."}, []string{"decision"})
	m.PlatformLimited = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_platform_rate_limited_total", Help: "HTTP 429 answers from chat platforms."}, []string{"channel"})
	m.Reconnects = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_reconnects_total", Help: "Platform connection re-establishments."}, []string{"channel"})
	m.Degraded = prometheus.NewCounter(prometheus.CounterOpts{Name: "echogate_degraded_total", Help: "Turns answered with the fallback text after an unrecoverable error."})
	m.EmbeddingSkipped = prometheus.NewCounter(prometheus.CounterOpts{Name: "echogate_retrieval_keyword_only_total", Help: "Retrievals that skipped vectors because the embedding service was unavailable."})
	m.HistoryReads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_history_reads_total", Help: "Transcript windows loaded for turns: from the history cache plus newer entries (cache), or read whole (store)."}, []string{"source"})
	m.AdapterPanics = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_adapter_panics_total", Help: "Panics recovered in a platform adapter's send, stream, edit or background path (the call failed, the process lived)."}, []string{"channel", "path"})
	m.historyCached, m.historyLoaded = m.HistoryReads.WithLabelValues("cache"), m.HistoryReads.WithLabelValues("store")
	r.MustRegister(m.EventsIn, m.Duplicates, m.Rejected, m.MailboxDepth, m.ActiveSessions, m.Turns, m.TurnSeconds,
		m.FirstToken, m.ModelCalls, m.Tokens, m.SpendUSD, m.ToolCalls, m.ToolSeconds, m.BreakerState,
		m.ApprovalsPending, m.ApprovalWait, m.Approvals, m.PlatformLimited, m.Reconnects, m.Degraded, m.EmbeddingSkipped,
		m.HistoryReads, m.AdapterPanics,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerAgents(r)
	m.registerStages(r)
	m.registerSkills(r)
	m.registerSchedule(r)
	return m
}

// AdapterPanic counts a panic recovered in channel's adapter on path (send, edit, stream…).
func (m *Metrics) AdapterPanic(channel, path string) {
	if m != nil {
		m.AdapterPanics.WithLabelValues(channel, path).Inc()
	}
}

func (m *Metrics) Event(channel, kind string) {
	if m != nil {
		m.EventsIn.WithLabelValues(channel, kind).Inc()
	}
}

func (m *Metrics) Duplicate(channel string) {
	if m != nil {
		m.Duplicates.WithLabelValues(channel).Inc()
	}
}

func (m *Metrics) Reject(channel, reason string) {
	if m != nil {
		m.Rejected.WithLabelValues(channel, reason).Inc()
	}
}

func (m *Metrics) Mailbox(depthDelta, sessionsDelta float64) {
	if m != nil {
		m.MailboxDepth.Add(depthDelta)
		m.ActiveSessions.Add(sessionsDelta)
	}
}

func (m *Metrics) Turn(channel, status string, d time.Duration) {
	if m != nil {
		m.Turns.WithLabelValues(channel, status).Inc()
		m.TurnSeconds.WithLabelValues(channel, status).Observe(d.Seconds())
	}
}

func (m *Metrics) TimeToFirstToken(channel string, d time.Duration) {
	if m != nil {
		m.FirstToken.WithLabelValues(channel).Observe(d.Seconds())
	}
}

// ModelCall counts one model call and its usage.
func (m *Metrics) ModelCall(model string, failed bool, in, out, cached int64, costUSD float64, kind string) {
	if m == nil {
		return
	}
	result := "ok"
	if failed {
		result = "error"
	}
	if kind == "model" || kind == "" {
		m.ModelCalls.WithLabelValues(model, result).Inc()
	}
	m.Tokens.WithLabelValues(model, "input").Add(float64(in))
	m.Tokens.WithLabelValues(model, "output").Add(float64(out))
	if cached > 0 {
		m.Tokens.WithLabelValues(model, "cached").Add(float64(cached))
	}
	if costUSD > 0 {
		m.SpendUSD.WithLabelValues(model, kind).Add(costUSD)
	}
}

func (m *Metrics) ToolCall(tool, result string, d time.Duration) {
	if m != nil {
		m.ToolCalls.WithLabelValues(tool, result).Inc()
		if d > 0 {
			m.ToolSeconds.WithLabelValues(tool).Observe(d.Seconds())
		}
	}
}

// Breaker records a breaker's state: "closed", "half-open" or "open".
func (m *Metrics) Breaker(name, kind, state string) {
	if m == nil {
		return
	}
	v := 0.0
	switch state {
	case "half-open":
		v = 1
	case "open":
		v = 2
	}
	m.BreakerState.WithLabelValues(name, kind).Set(v)
}

func (m *Metrics) ApprovalPending(delta float64) {
	if m != nil {
		m.ApprovalsPending.Add(delta)
	}
}

func (m *Metrics) ApprovalDecided(decision string, wait time.Duration) {
	if m != nil {
		m.Approvals.WithLabelValues(decision).Inc()
		if wait > 0 {
			m.ApprovalWait.Observe(wait.Seconds())
		}
	}
}

func (m *Metrics) RateLimited(channel string) {
	if m != nil {
		m.PlatformLimited.WithLabelValues(channel).Inc()
	}
}

func (m *Metrics) Reconnect(channel string) {
	if m != nil {
		m.Reconnects.WithLabelValues(channel).Inc()
	}
}

func (m *Metrics) DegradedAnswer() {
	if m != nil {
		m.Degraded.Inc()
	}
}

func (m *Metrics) KeywordOnly() {
	if m != nil {
		m.EmbeddingSkipped.Inc()
	}
}

// HistoryCache counts a turn's transcript window: served from the history cache (plus the
// entries appended since) or read whole from the store.
func (m *Metrics) HistoryCache(hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.historyCached.Inc()
	} else {
		m.historyLoaded.Inc()
	}
}
