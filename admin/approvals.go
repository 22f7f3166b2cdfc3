package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/pipeline"
)

// Approval is a paused turn as the console lists it (the agent state stays on the server).
type Approval struct {
	Session     echogate.SessionKey `json:"session"`
	Platform    string              `json:"platform"`
	Turn        string              `json:"turn"`
	Kind        echogate.PauseKind  `json:"kind"`
	CallID      string              `json:"call_id"`
	Tool        string              `json:"tool"`
	Args        string              `json:"args,omitempty"`
	RequestedBy string              `json:"requested_by"`
	Prompt      echogate.MessageRef `json:"prompt"`
	CreatedAt   time.Time           `json:"created_at"`
	ExpiresAt   time.Time           `json:"expires_at,omitzero"`
}

// MaxArgsShown caps the tool arguments the approvals list (and the web chat's history) shows.
const MaxArgsShown = 2000

func (a *API) handleApprovals(w http.ResponseWriter, r *http.Request) {
	ps, err := a.Store.ListPending(r.Context(), limitParam(r, 100))
	if err != nil {
		WriteJSON(w, nil, WrapErr("list pending approvals", err))
		return
	}
	out := make([]Approval, 0, len(ps))
	for _, p := range ps {
		out = append(out, Approval{
			Session: p.Session, Platform: platformOf(p.Session), Turn: p.Turn, Kind: p.Kind, CallID: p.CallID, Tool: p.Tool,
			Args: PendingArgs(p), RequestedBy: p.RequestedBy, Prompt: p.Prompt, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
		})
	}
	WriteJSON(w, out, nil)
}

// PendingArgs returns the paused call's arguments from the agent state, secrets masked and
// capped as in the approval prompt; empty when the state does not hold them.
func PendingArgs(p echogate.PendingTurn) string {
	var st agent.State
	if json.Unmarshal(p.State, &st) != nil {
		return ""
	}
	for _, c := range st.Pending {
		if c.ID == p.CallID {
			return pipeline.RedactArgs(c.Arguments, MaxArgsShown)
		}
	}
	return ""
}

func platformOf(k echogate.SessionKey) string {
	p, _, _ := strings.Cut(string(k), ":")
	return p
}
