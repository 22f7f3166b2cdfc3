package metrics

// agentCollectors count per agent profile (agents:) and the access rules' refusals.
type agentCollectors struct {
	AgentTurns    *CounterVec // agent, status
	AgentSpendUSD *CounterVec // agent
	AgentTokens   *CounterVec // agent, direction (input|output)
	Refused       *CounterVec // channel, reason (user|channel|workspace|dm)
}

func (m *Metrics) registerAgents(r *registry) {
	m.AgentTurns = r.counterVec("echogate_agent_turns_total", "Finished turns by agent profile and status.", "agent", "status")
	m.AgentSpendUSD = r.counterVec("echogate_agent_spend_usd_total", "Spend in USD of conversation turns by agent profile.", "agent")
	m.AgentTokens = r.counterVec("echogate_agent_tokens_total", "Model tokens of conversation turns by agent profile and direction.", "agent", "direction")
	m.Refused = r.counterVec("echogate_access_refused_total", "Inbound events refused by the access rules, by channel and reason.", "channel", "reason")
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
