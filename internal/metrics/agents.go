package metrics

import "github.com/prometheus/client_golang/prometheus"

// agentCollectors count per agent profile (agents:) and the access rules' refusals.
type agentCollectors struct {
	AgentTurns    *prometheus.CounterVec // agent, status
	AgentSpendUSD *prometheus.CounterVec // agent
	AgentTokens   *prometheus.CounterVec // agent, direction (input|output)
	Refused       *prometheus.CounterVec // channel, reason (user|channel|workspace|dm)
}

func (m *Metrics) registerAgents(r *prometheus.Registry) {
	m.AgentTurns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_agent_turns_total", Help: "Finished turns by agent profile and status."}, []string{"agent", "status"})
	m.AgentSpendUSD = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_agent_spend_usd_total", Help: "Spend in USD of conversation turns by agent profile."}, []string{"agent"})
	m.AgentTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_agent_tokens_total", Help: "Model tokens of conversation turns by agent profile and direction."}, []string{"agent", "direction"})
	m.Refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_access_refused_total", Help: "Inbound events refused by the access rules, by channel and reason."}, []string{"channel", "reason"})
	r.MustRegister(m.AgentTurns, m.AgentSpendUSD, m.AgentTokens, m.Refused)
}

// AgentTurn counts one finished turn of an agent.
func (m *Metrics) AgentTurn(agent, status string) {
	if m != nil {
		m.AgentTurns.WithLabelValues(agent, status).Inc()
	}
}

// AgentUsage adds one usage of an agent's turn.
func (m *Metrics) AgentUsage(agent string, in, out int64, usd float64) {
	if m == nil {
		return
	}
	if usd > 0 {
		m.AgentSpendUSD.WithLabelValues(agent).Add(usd)
	}
	if in > 0 {
		m.AgentTokens.WithLabelValues(agent, "input").Add(float64(in))
	}
	if out > 0 {
		m.AgentTokens.WithLabelValues(agent, "output").Add(float64(out))
	}
}

// AccessRefused counts one event refused by the access rules.
func (m *Metrics) AccessRefused(channel, reason string) {
	if m != nil {
		m.Refused.WithLabelValues(channel, reason).Inc()
	}
}
