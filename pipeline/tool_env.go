package pipeline

import (
	"time"

	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/redact"
	"github.com/echogate/echogate/tools"
)

// toolEnv is what a turn's tool calls reach outside the turn, given to it at construction
// (newTurn): the catalogue, the policy the gate applies (inference_gate.go) and what runs a
// call (inference_tools.go). It is fixed after New.
type toolEnv struct {
	reg      *tools.Registry
	filter   func(tool, channel, userID string) bool // nil: every tool in every conversation
	redactor *redact.Redactor
	tracer   Tracer                   // nil: no spans
	timeout  time.Duration            // Config.ToolTimeout
	policy   map[string]agent.Verdict // tools.<name>.approval
	// needsApprover reports whether a call of the tool needs an approver (authority.go).
	needsApprover func(tool string) bool
}

// toolEnv is the pipeline's toolEnv.
func (p *Pipeline) toolEnv() toolEnv {
	return toolEnv{reg: p.d.Tools, filter: p.d.ToolFilter, redactor: p.d.Redactor, tracer: p.d.Tracer,
		timeout: p.cfg.ToolTimeout, policy: p.policy, needsApprover: p.needsApprover}
}
