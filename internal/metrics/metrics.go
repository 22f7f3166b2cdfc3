// Package metrics holds the gateway's Prometheus collectors and serves them in the Prometheus
// text format. One *Metrics is made per process by cmd and passed to the packages that count
// things; every method is safe on a nil *Metrics, so tests and tools that do not care pass nil.
package metrics

import "time"

// Metrics is the set of collectors, registered on its own registry.
type Metrics struct {
	reg *registry

	EventsIn         *CounterVec   // channel, kind
	Duplicates       *CounterVec   // channel
	Rejected         *CounterVec   // channel, reason
	MailboxDepth     *Gauge        // queued events over all sessions
	ActiveSessions   *Gauge        // sessions with a live mailbox
	Turns            *CounterVec   // channel, status
	TurnSeconds      *HistogramVec // channel, status
	FirstToken       *HistogramVec // channel
	ModelCalls       *CounterVec   // model, result
	Tokens           *CounterVec   // model, direction (input|output|cached)
	SpendUSD         *CounterVec   // model, kind
	ToolCalls        *CounterVec   // tool, result (ok|error|denied|failed)
	ToolSeconds      *HistogramVec // tool
	BreakerState     *GaugeVec     // name, kind: 0 closed, 1 half-open, 2 open
	ApprovalsPending *Gauge
	ApprovalWait     *Histogram
	Approvals        *CounterVec // decision
	PlatformLimited  *CounterVec // channel (HTTP 429s from platforms)
	Reconnects       *CounterVec // channel
	Degraded         *Counter    // echogate_degraded_total
	EmbeddingSkipped *Counter    // retrieval ran keyword-only (embedding breaker open)
	HistoryReads     *CounterVec // source: cache (only newer entries read) | store (whole window read)
	AdapterPanics    *CounterVec // channel, path: panics recovered in a platform adapter
	agentCollectors
	stageCollectors

	historyCached, historyLoaded *Counter
}

// New makes and registers every collector (plus the Go runtime and process figures).
func New() *Metrics {
	r := &registry{}
	r.add(goFamilies)
	r.add(processFamilies)
	m := &Metrics{reg: r}
	m.EventsIn = r.counterVec("echogate_events_total", "Inbound events by channel and kind.", "channel", "kind")
	m.Duplicates = r.counterVec("echogate_events_duplicate_total", "Inbound events dropped as duplicates.", "channel")
	m.Rejected = r.counterVec("echogate_events_rejected_total", "Inbound events refused (mailbox full, shutting down, invalid).", "channel", "reason")
	m.MailboxDepth = r.gauge("echogate_mailbox_depth", "Events queued in session mailboxes.")
	m.ActiveSessions = r.gauge("echogate_sessions_active", "Sessions with a live mailbox.")
	m.Turns = r.counterVec("echogate_turns_total", "Finished turns by channel and status.", "channel", "status")
	m.TurnSeconds = r.histogramVec("echogate_turn_duration_seconds", "Turn latency from dequeue to final reply.", []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}, "channel", "status")
	m.FirstToken = r.histogramVec("echogate_time_to_first_token_seconds", "Time from dequeue to the first streamed token.", []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30}, "channel")
	m.ModelCalls = r.counterVec("echogate_model_calls_total", "Model calls by model and result.", "model", "result")
	m.Tokens = r.counterVec("echogate_model_tokens_total", "Tokens by model and direction.", "model", "direction")
	m.SpendUSD = r.counterVec("echogate_spend_usd_total", "Spend in USD by model and usage kind.", "model", "kind")
	m.ToolCalls = r.counterVec("echogate_tool_calls_total", "Tool calls by tool and result.", "tool", "result")
	m.ToolSeconds = r.histogramVec("echogate_tool_duration_seconds", "Tool call duration.", DefBuckets, "tool")
	m.BreakerState = r.gaugeVec("echogate_breaker_state", "Circuit breaker state: 0 closed, 1 half-open, 2 open.", "name", "kind")
	m.ApprovalsPending = r.gauge("echogate_approvals_pending", "Turns paused waiting for an approval or an answer.")
	m.ApprovalWait = r.histogram("echogate_approval_wait_seconds", "Time from approval prompt to decision.", []float64{1, 5, 15, 60, 300, 900, 3600, 14400, 86400})
	m.Approvals = r.counterVec("echogate_approvals_total", "Approval decisions.", "decision")
	m.PlatformLimited = r.counterVec("echogate_platform_rate_limited_total", "HTTP 429 answers from chat platforms.", "channel")
	m.Reconnects = r.counterVec("echogate_reconnects_total", "Platform connection re-establishments.", "channel")
	m.Degraded = r.counter("echogate_degraded_total", "Turns answered with the fallback text after an unrecoverable error.")
	m.EmbeddingSkipped = r.counter("echogate_retrieval_keyword_only_total", "Retrievals that skipped vectors because the embedding service was unavailable.")
	m.HistoryReads = r.counterVec("echogate_history_reads_total", "Transcript windows loaded for turns: from the history cache plus newer entries (cache), or read whole (store).", "source")
	m.AdapterPanics = r.counterVec("echogate_adapter_panics_total", "Panics recovered in a platform adapter's send, stream, edit or background path (the call failed, the process lived).", "channel", "path")
	m.historyCached, m.historyLoaded = m.HistoryReads.WithLabelValues("cache"), m.HistoryReads.WithLabelValues("store")
	m.registerAgents(r)
	m.registerStages(r)
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
