package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/echogate/echogate"
)

type approveRequest struct {
	Session  string `json:"session"`
	User     string `json:"user"`
	CallID   string `json:"call_id"`
	PromptID string `json:"prompt_id"`
	Decision string `json:"decision"`
}

// handleApprove answers POST /api/chat/approve: it submits the decision on a pending approval
// prompt of a live session (or, through approveStored, of one this process does not know) as the
// reaction the pipeline reads, in three steps: read the request, claim the prompt, submit.
func (c *Channel) handleApprove(w http.ResponseWriter, r *http.Request) {
	req, user, emoji, ok := c.readApprove(w, r)
	if !ok {
		return
	}
	now := c.cfg.Now()
	id := newID()

	s := c.lockLiveSession(req.Session)
	if s == nil {
		if c.approveStored(w, r, req, user, emoji) {
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("unknown session %q: it has no pending approval (sessions are forgotten after %s idle)", req.Session, c.cfg.IdleTimeout)})
		return
	}
	ref, ok := c.claimPrompt(w, r, s, req, user, emoji, id, now)
	if !ok {
		return
	}
	c.submitDecision(w, r, s, req, user, emoji, id, ref, now)
}

// readApprove reads and checks an approval decision: the session, the user, the decision word
// (as its reaction emoji) and that it names a call or a prompt. ok is false when it answered a
// bad request itself.
func (c *Channel) readApprove(w http.ResponseWriter, r *http.Request) (req approveRequest, user, emoji string, ok bool) {
	if !readPost(w, r, 16<<10, &req, approveFields) {
		return req, "", "", false
	}
	if e := sessionParam(req.Session); e != nil {
		writeError(w, e)
		return req, "", "", false
	}
	user, e := c.user(r, req.User)
	if e != nil {
		writeError(w, e)
		return req, "", "", false
	}
	emoji, ok = echogate.DecisionReaction(req.Decision)
	if !ok {
		writeError(w, badRequest("decision %q is not one of %s", req.Decision, echogate.DecisionWords))
		return req, "", "", false
	}
	if req.CallID == "" && req.PromptID == "" {
		writeError(w, badRequest("name the approval: give call_id (from the approval_request event) or prompt_id"))
		return req, "", "", false
	}
	return req, user, emoji, true
}

// claimPrompt finds the pending approval prompt req names in the live session s, which the
// caller locked, and records decision id on it and as queued in s; it unlocks s. ok is false
// when it answered the request itself (an ambiguous request, a prompt not posted yet, or one
// unknown here and in the store).
func (c *Channel) claimPrompt(w http.ResponseWriter, r *http.Request, s *session, req approveRequest, user, emoji, id string, now time.Time) (ref echogate.MessageRef, ok bool) {
	var p *prompt
	what := "call " + strconv.Quote(req.CallID)
	if req.CallID != "" {
		p = s.promptByCall(req.CallID)
		if p != nil && req.PromptID != "" && p.ref.ID != req.PromptID {
			s.mu.Unlock()
			writeError(w, badRequest("call_id %q and prompt_id %q name different approvals: give one of them", req.CallID, req.PromptID))
			return ref, false
		}
	} else {
		p = s.promptByRef(req.PromptID)
		what = "prompt " + strconv.Quote(req.PromptID)
	}
	if p == nil {
		s.mu.Unlock()
		if c.approveStored(w, r, req, user, emoji) {
			return ref, false
		}
		writeError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf(
			"no pending approval for %s in session %q: it was decided already or never asked", what, req.Session)})
		return ref, false
	}
	if p.ref.IsZero() {
		s.mu.Unlock()
		writeError(w, &apiError{status: http.StatusConflict, retryAfter: time.Second, msg: fmt.Sprintf(
			"the approval prompt for %s is not posted yet: retry in a moment", what)})
		return ref, false
	}
	ref = p.ref
	if len(p.decided) >= 8 {
		p.decided = p.decided[1:]
	}
	p.decided = append(p.decided, id)
	s.queue(id, now)
	s.lastActive = now
	s.mu.Unlock()
	return ref, true
}

// submitDecision submits decision id as the reaction on the approval prompt ref and answers 202;
// when the sink refuses it, it forgets id as queued in s and answers the sink's error.
func (c *Channel) submitDecision(w http.ResponseWriter, r *http.Request, s *session, req approveRequest, user, emoji, id string, ref echogate.MessageRef, now time.Time) {
	ev := echogate.InboundEvent{
		ID:           id,
		Kind:         echogate.KindReaction,
		Conversation: c.conversation(req.Session),
		Actor:        echogate.Actor{ID: user},
		Reaction:     emoji,
		Target:       ref,
		Message:      ref,
		ReceivedAt:   now,
	}
	log := c.log.With("session", req.Session, "event_id", id)
	if err := c.submit(r.Context(), ev); err != nil {
		s.mu.Lock()
		delete(s.queued, id)
		s.mu.Unlock()
		log.Warn("approval decision not accepted", "err", err)
		writeError(w, c.sinkError(err))
		return
	}
	log.Info("approval decision submitted", "decision", req.Decision, "prompt", ref.ID)
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "event_id": id, "prompt_id": ref.ID})
}
