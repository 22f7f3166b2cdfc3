package admin

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/pipeline"
)

// POST /api/approvals/decide: the console decides an approval of any session, as itself.

// DecideRequest is the body of POST /api/approvals/decide.
type DecideRequest struct {
	Session  string `json:"session"`
	CallID   string `json:"call_id"`
	Decision string `json:"decision"`
	// User is the operator's name, recorded as console:<name>; empty records "console".
	User string `json:"user"`
}

// handleDecide submits an approval decision for any session through the pipeline, as a reaction
// on the session's approval prompt by the console itself (see consoleDecider), never as a
// listed approver. The pipeline resumes the turn and answers on the session's own platform.
func (a *API) handleDecide(w http.ResponseWriter, r *http.Request) {
	// The route is guarded by the one rule already; checked again here because deciding as the
	// gateway is the console's alone.
	if !a.Operator(r) {
		WriteError(w, http.StatusForbidden, "approval decisions from the console need authentication: open the console at http://127.0.0.1 or http://localhost on this machine, or set http.auth_token (ECHOGATE_HTTP_AUTH_TOKEN)")
		return
	}
	var req DecideRequest
	if !web.ReadMutation(w, r, http.MethodPost, 16<<10, &req, `"session", "call_id", "decision" and "user"`) {
		return
	}
	ctx := r.Context()
	ev, pend, ok := a.decisionEvent(ctx, w, req)
	if !ok {
		return
	}
	forget := func() {}
	if ev.Conversation.Platform == echogate.PlatformWeb && a.Expect != nil {
		forget = a.Expect(ev.Conversation.Channel, ev.ID) // the chat page follows the resumed turn
	}
	if err := a.Pipeline.Submit(ctx, ev); err != nil {
		forget()
		a.Log.Warn("console approval decision not accepted", "session", req.Session, "event_id", ev.ID, "err", err)
		writeSubmitError(w, req.Session, err)
		return
	}
	a.Log.Info("console approval decision submitted", "session", req.Session, "event_id", ev.ID, "tool", pend.Tool,
		"turn", pend.Turn, "decision", req.Decision, "by", ev.Actor.ID)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "event_id": ev.ID, "actor": ev.Actor.ID})
}

// decisionEvent checks req against the session's pending approval and returns the reaction
// event that decides it; ok false means the error was written.
func (a *API) decisionEvent(ctx context.Context, w http.ResponseWriter, req DecideRequest) (ev echogate.InboundEvent, pend echogate.PendingTurn, ok bool) {
	switch {
	case req.Session == "":
		WriteError(w, http.StatusBadRequest, "session is required: the session key from GET /api/approvals, e.g. slack:C123:1700000000.000100")
		return ev, pend, false
	case req.CallID == "":
		WriteError(w, http.StatusBadRequest, "call_id is required: the call_id from GET /api/approvals")
		return ev, pend, false
	}
	emoji, ok := echogate.DecisionReaction(req.Decision)
	if !ok {
		WriteError(w, http.StatusBadRequest, fmt.Sprintf("decision %q is not one of %s", req.Decision, echogate.DecisionWords))
		return ev, pend, false
	}
	key := echogate.SessionKey(req.Session)
	if pend, ok = a.pendingApproval(ctx, w, req); !ok {
		return ev, pend, false
	}
	sess, err := a.Store.GetSession(ctx, key)
	if err != nil {
		WriteJSON(w, nil, WrapErr("session "+req.Session, err))
		return ev, pend, false
	}
	platform := sess.Conversation.Platform
	if !slices.Contains(a.Channels(), platform) {
		WriteError(w, http.StatusConflict, "session "+req.Session+" belongs to the "+platform+" channel, which this server does not run: decide it there (for console sessions: echogate chat --session)")
		return ev, pend, false
	}
	decider, err := consoleDecider(req.User)
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return ev, pend, false
	}
	return echogate.InboundEvent{
		ID:           consoleEventID(),
		Kind:         echogate.KindReaction,
		Conversation: sess.Conversation,
		Session:      key,
		Actor:        decider,
		Reaction:     emoji,
		Target:       pend.Prompt,
		Message:      pend.Prompt,
		ReceivedAt:   a.Now(),
	}, pend, true
}

// pendingApproval returns the session's pause when it is the approval of req's call, with its
// prompt posted; ok false means the error was written.
func (a *API) pendingApproval(ctx context.Context, w http.ResponseWriter, req DecideRequest) (echogate.PendingTurn, bool) {
	pend, err := a.Store.GetPending(ctx, echogate.SessionKey(req.Session))
	switch {
	case errors.Is(err, echogate.ErrNotFound):
		WriteError(w, http.StatusNotFound, "session "+req.Session+" has no pending approval: it was decided already, timed out, or never asked")
	case err != nil:
		WriteJSON(w, nil, WrapErr("pending turn of "+req.Session, err))
	case pend.Kind != echogate.PauseApproval:
		WriteError(w, http.StatusConflict, "session "+req.Session+" waits for an answer to a question, not an approval: answer it in the conversation")
	case pend.CallID != req.CallID:
		WriteError(w, http.StatusConflict, fmt.Sprintf("the pending approval of session %s is call %q, not %q: it changed; reload the approvals", req.Session, pend.CallID, req.CallID))
	case pend.Prompt.IsZero():
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusConflict, "the approval prompt of session "+req.Session+" is not posted yet: retry in a moment")
	default:
		return pend, true
	}
	return pend, false
}

// writeSubmitError answers a decision the pipeline did not accept: busy (429), not running
// (503), or another failure (500).
func writeSubmitError(w http.ResponseWriter, session string, err error) {
	switch d, limited := echogate.RetryAfter(err); {
	case limited:
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((d+time.Second-1)/time.Second))))
		WriteError(w, http.StatusTooManyRequests, "the session is busy: retry in a moment ("+err.Error()+")")
	case errors.Is(err, pipeline.ErrShuttingDown), errors.Is(err, pipeline.ErrNotRunning):
		w.Header().Set("Retry-After", "5")
		WriteError(w, http.StatusServiceUnavailable, "the gateway is not accepting events ("+err.Error()+"): retry later")
	default:
		WriteJSON(w, nil, WrapErr("submit decision for "+session, err))
	}
}

// maxOperatorName bounds the operator name a console decision may carry.
const maxOperatorName = 64

// consoleDecider is who a console decision is recorded as: the console itself ("console"), or
// "console:<operator>" when the request names its operator (operator is the request's "user":
// letters, digits, '.', '_', '-' and '@'). It is never a listed approver: the console does not
// speak for a person. The event is the gateway's own (IsSelf), which no channel sets and only
// this authenticated path submits; the pipeline lets the gateway decide a pause, records the
// decider qualified with the session's platform ("slack:console:ops.lead") and shows its name on
// the prompt.
func consoleDecider(operator string) (echogate.Actor, error) {
	operator = strings.TrimSpace(operator)
	if operator == "" {
		return echogate.Actor{ID: ConsoleName, Name: "the echogate console", IsSelf: true}, nil
	}
	if len(operator) > maxOperatorName || strings.IndexFunc(operator, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@", r))
	}) >= 0 {
		return echogate.Actor{}, fmt.Errorf("user %q is not an operator name: the console decides as itself and records the decision as %s:<your name>; "+
			"give your name (letters, digits, '.', '_', '-', '@'; at most %d), or leave user empty (it does not act as a platform user or a listed approver)",
			operator, ConsoleName, maxOperatorName)
	}
	return echogate.Actor{ID: ConsoleName + ":" + operator, Name: "the echogate console (" + operator + ")", IsSelf: true}, nil
}

// consoleEventID returns a fresh id for an event the console submits.
func consoleEventID() string { return "console." + rand.Text() }
