package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// Outcomes of a pause, as handlePaused names them (also the approval metric's label).
const (
	outcomeApproved        = "approved"
	outcomeApprovedSession = "approved_session"
	outcomeDenied          = "denied"
	outcomeTimeout         = "timeout"
	outcomeSuperseded      = "superseded"
	outcomeStopped         = "stopped"
)

// showDecision edits an approval prompt to show how it was decided and by whom, whichever
// way it was decided (reaction, button, text, console, timeout, stop, a new message): one
// function on the one decision path. Editing replaces the prompt's text, so channels drop its
// buttons with it. Channels that cannot edit, and asks (their question stays as asked), are
// left alone; a failed edit is logged, never fatal: the decision stands.
func (p *Pipeline) showDecision(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn, st *agent.State, outcome string) {
	if pend.Kind != echogate.PauseApproval || pend.Prompt.IsZero() {
		return
	}
	ed := p.caps[ev.Conversation.Platform].Editor
	if ed == nil {
		return
	}
	call := echogate.ToolCall{Name: pend.Tool}
	if st == nil {
		st = new(agent.State)
		_ = json.Unmarshal(pend.State, st) // unreadable: the prompt shows the tool's name only
	}
	if len(st.Pending) > 0 {
		call = st.Pending[0]
	}
	text := decidedPrompt(call, outcome, p.actorName(&ev), p.nameOf(pend.RequestedBy), p.cfg.ApprovalTimeout.String())
	if err := ed.Edit(ctx, pend.Prompt, text); err != nil {
		log.Warn("pipeline: show the decision on the approval prompt", "turn", pend.Turn, "err", err)
	}
}

// decidedPrompt is the text of an approval prompt after its decision; a grant (🔁) is the
// requester's own.
func decidedPrompt(call echogate.ToolCall, outcome, by, requester, timeout string) string {
	head := fmt.Sprintf("🔐 **Approval needed**: I wanted to run `%s`", call.Name)
	if call.Arguments != "" {
		block, _ := callBlock(call.Arguments) // as the prompt showed it
		head += fmt.Sprintf(" with:\n```\n%s\n```", block)
	}
	var line string
	switch outcome {
	case outcomeApproved:
		line = "✅ Approved once by " + by + "."
	case outcomeApprovedSession:
		line = fmt.Sprintf("🔁 Approved by %s; `%s` runs without asking for %s for the rest of this conversation (others are still asked).", by, call.Name, requester)
	case outcomeDenied:
		line = "❌ Denied by " + by + "; it was not run."
	case outcomeTimeout:
		line = "⏱ Nobody decided within " + timeout + "; it was not run."
	case outcomeSuperseded:
		line = "↪️ Not run: " + by + " sent a new message instead."
	case outcomeStopped:
		line = "🛑 Stopped by " + by + "; it was not run."
	default:
		line = outcome + " by " + by + "."
	}
	return head + "\n" + line
}
