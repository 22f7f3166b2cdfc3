package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// pause persists the paused state and posts the approval prompt or the question. The pause is
// durable before the prompt is posted, so a decision can never arrive for a pause that is not
// stored yet; it is saved again with the prompt's reference. A pause that cannot be saved
// fails the turn.
func (s *ResponseStage) pause(ctx context.Context, t *Turn, res agent.Result) (string, error) {
	pz := res.Pause
	out := s.pausePrompt(ctx, t, res)
	t.out.savePlan(&res.State)
	t.saveRun(&res.State) // scheduled.go: the resumed turn is the same run
	state, err := json.Marshal(res.State)
	if err != nil {
		t.enter(StateFailed)
		return out.Text, fmt.Errorf("pipeline: encode paused state: %w", err)
	}
	pend := echogate.PendingTurn{Session: t.key, Turn: t.id, Kind: pz.Kind, CallID: pz.Call.ID, Tool: pz.Call.Name,
		State: state, RequestedBy: t.userID, CreatedAt: s.now()}
	if pz.Kind == echogate.PauseApproval && t.pauseExpires() { // scheduled.go
		pend.ExpiresAt = s.now().Add(s.approvalTimeout)
	}
	resting := StateWaitingApproval
	if pz.Kind == echogate.PauseAsk {
		resting = StateClarifying
	}
	// The turn rests before its pause is saved: a pause its lifecycle refuses is never saved
	// (the turn fails; the ResponseStage answers it, failRefused).
	changed := t.enter(resting)
	if t.refused() != nil {
		return "", nil
	}
	if err := s.savePending(ctx, pend); err != nil {
		t.enter(StateFailed)
		return out.Text, fmt.Errorf("pipeline: save paused turn: %w", err)
	}
	s.metrics.ApprovalPending(1)
	ref, err := t.rep.Send(ctx, out)
	if err != nil {
		return out.Text, fmt.Errorf("pipeline: post approval prompt: %w", err)
	}
	pend.Prompt = ref
	if err := s.savePending(ctx, pend); err != nil {
		return out.Text, fmt.Errorf("pipeline: save prompt reference: %w", err)
	}
	if full, ok := fullArgs(pz.Call); ok && pz.Kind == echogate.PauseApproval {
		// The prompt cut the arguments: every one follows, so nobody approves what they cannot see.
		if _, err := t.rep.Send(ctx, t.out.outbound(echogate.OutNotice, full)); err != nil {
			t.log.Warn("pipeline: post the full arguments of an approval", "tool", pz.Call.Name, "err", err)
		}
	}
	switch {
	case !changed:
	case pz.Kind == echogate.PauseAsk:
		t.out.event(echogate.TurnEvent{Type: echogate.TurnAsk, Text: pz.Question, CallID: pz.Call.ID, Tool: pz.Call.Name})
	default:
		t.out.event(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Text: out.Text, CallID: pz.Call.ID, Tool: pz.Call.Name,
			Args: RedactArgs(pz.Call.Arguments, maxPromptArgs)})
	}
	t.log.Info("turn paused", "kind", pz.Kind, "tool", pz.Call.Name, "call", pz.Call.ID)
	return out.Text, nil
}

// pausePrompt closes a streamed message with what was said so far (the prompt is its own
// message, so reactions on it are unambiguous) and returns the prompt or question to post.
func (s *ResponseStage) pausePrompt(ctx context.Context, t *Turn, res agent.Result) echogate.Outbound {
	pz := res.Pause
	text, streaming := t.out.streamed()
	var body string
	if pz.Kind == echogate.PauseAsk {
		body = "❓ " + pz.Question
	} else {
		body = approvalPrompt(pz.Call, s.requesterName(t)) + s.approverNote(pz.Call.Name, t.prof.approvers)
	}
	if streaming {
		if _, err := t.out.finish(ctx, echogate.OutReply, text); err != nil {
			t.log.Warn("pipeline: finish streamed text before pause", "err", err)
		}
	} else if strings.TrimSpace(res.Answer) != "" {
		// The call first: the model's words go under it, marked as the model's.
		body += "\n\n" + modelWords(res.Answer)
	}
	out := t.out.outbound(echogate.OutApprovalPrompt, body)
	if pz.Kind == echogate.PauseAsk {
		out.Kind = echogate.OutReply
	} else {
		out.Reactions = []string{echogate.ReactionApprove, echogate.ReactionApproveSession, echogate.ReactionDeny}
	}
	return out
}
