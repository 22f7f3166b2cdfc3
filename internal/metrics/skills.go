package metrics

import "github.com/prometheus/client_golang/prometheus"

func (m *Metrics) registerSkills(r *prometheus.Registry) {
	m.SkillLoads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echogate_skill_loads_total",
		Help: "Skill bodies returned by the skill tool, by skill and agent profile."}, []string{"skill", "agent"})
	r.MustRegister(m.SkillLoads)
}

// SkillLoad counts one load of a skill's body in a turn of agent.
func (m *Metrics) SkillLoad(skill, agent string) {
	if m != nil {
		m.SkillLoads.WithLabelValues(skill, agent).Inc()
	}
}
