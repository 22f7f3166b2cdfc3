package web

import (
	"net/http"

	"github.com/echogate/echogate"
)

// approveStored decides an approval this process does not know (Config.StoredPrompt): with
// several replicas behind a load balancer the decision often reaches a replica other than the
// one that paused the turn. The decision is submitted as the reaction on the stored prompt,
// as for a known one; the pipeline checks it against the stored pause. It reports whether it
// answered the request (false: not found in the store either, the caller answers 404).
func (c *Channel) approveStored(w http.ResponseWriter, r *http.Request, req approveRequest, user, emoji string) bool {
	if c.cfg.StoredPrompt == nil || req.CallID == "" {
		return false
	}
	conv := c.conversation(req.Session)
	ref, ok := c.cfg.StoredPrompt(r.Context(), conv, req.CallID)
	if !ok {
		return false
	}
	// A zero ref: the pause is stored but its prompt's reference never was (its replica died
	// while posting it). The decision is on the session's pause by its call, whatever message
	// it names, which the pipeline accepts for such a pause.
	if req.PromptID != "" && !ref.IsZero() && req.PromptID != ref.ID {
		writeError(w, badRequest("call_id %q and prompt_id %q name different approvals: give one of them", req.CallID, req.PromptID))
		return true
	}
	now := c.cfg.Now()
	ev := echogate.InboundEvent{ID: newID(), Kind: echogate.KindReaction, Conversation: conv, Actor: echogate.Actor{ID: user},
		Reaction: emoji, Target: ref, Message: ref, ReceivedAt: now}
	log := c.log.With("session", req.Session, "event_id", ev.ID)
	if err := c.submit(r.Context(), ev); err != nil {
		log.Warn("approval decision not accepted", "err", err)
		writeError(w, c.sinkError(err))
		return true
	}
	log.Info("approval decision submitted for an approval asked elsewhere", "decision", req.Decision, "prompt", ref.ID)
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "event_id": ev.ID, "prompt_id": ref.ID})
	return true
}
