package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate/tools"
)

// DefaultElicitTimeout bounds how long a server's question waits for its answer: then it is
// declined and the tool call goes on.
const DefaultElicitTimeout = 5 * time.Minute

// Elicitation is a question an MCP server asks during one of its tool calls
// (elicitation/create): a form to fill in (Mode "form", Schema a flat JSON object schema) or a
// link to open (Mode "url").
type Elicitation struct {
	Server string
	// Tool is the registry name of the call the question came during.
	Tool string
	// Caller started that call's turn: the person to ask, and (with an approver) the only one
	// who may answer.
	Caller  tools.Caller
	Mode    string
	Message string
	Schema  json.RawMessage // form mode
	URL     string          // url mode
	ID      string          // url mode: the server's elicitation id
}

// Elicitation answers (ElicitAnswer.Action).
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitAnswer is the person's answer: Action is accept, decline or cancel; Content holds the
// form's values on accept (the schema's defaults fill what it leaves out).
type ElicitAnswer struct {
	Action  string
	Content map[string]any
}

// Elicitor puts a question to the person who started the call and returns their answer; it
// must return when ctx ends (the timeout), and its error declines.
type Elicitor func(ctx context.Context, e Elicitation) (ElicitAnswer, error)

// call is a tool call in flight on a server: who it acts for.
type inflightCall struct {
	tool   string
	caller tools.Caller
	ctx    context.Context // the call's: its end or deadline bounds a question's wait
}

// track records a call in flight until the returned func is called.
func (s *server) track(tool string, ctx context.Context) func() {
	caller, _ := tools.CallerFrom(ctx)
	s.mu.Lock()
	s.callSeq++
	id := s.callSeq
	s.inflight[id] = inflightCall{tool: tool, caller: caller, ctx: ctx}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
	}
}

// asker returns the call an elicitation belongs to. The protocol does not say which call a
// question comes from, so it is the call in flight on the server; when calls for different
// people are in flight the question could reach the wrong person, and it is declined.
func (s *server) asker() (inflightCall, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *inflightCall
	for _, c := range s.inflight {
		switch {
		case c.caller.UserID == "":
			return inflightCall{}, errors.New("a tool call in flight acts for nobody known")
		case found == nil:
			found = &c
		case found.caller.UserID != c.caller.UserID || found.caller.Session != c.caller.Session:
			return inflightCall{}, errors.New("tool calls for different people are in flight; the question cannot be put to one of them safely")
		}
	}
	if found == nil {
		return inflightCall{}, errors.New("no tool call is in flight")
	}
	return *found, nil
}

// elicit is the session's elicitation handler: it puts the question to the caller of the call
// in flight through the configured Elicitor, bounded by the elicit timeout; whatever fails
// declines, so the server's tool call always gets an answer.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p := req.Params
	decline := func(why string) (*sdk.ElicitResult, error) {
		s.log.Info("mcp: elicitation declined", "reason", why, "mode", p.Mode)
		return &sdk.ElicitResult{Action: ElicitDecline}, nil
	}
	c, err := s.asker()
	if err != nil {
		return decline(err.Error())
	}
	e := Elicitation{Server: s.cfg.Name, Tool: c.tool, Caller: c.caller, Mode: p.Mode, Message: p.Message, URL: p.URL, ID: p.ElicitationID}
	if e.Mode == "" {
		e.Mode = "form"
	}
	if p.RequestedSchema != nil {
		if e.Schema, err = json.Marshal(p.RequestedSchema); err != nil {
			return decline("unreadable schema: " + err.Error())
		}
	}
	ectx, cancel := questionContext(ctx, c.ctx, s.m.cfg.ElicitTimeout)
	defer cancel()
	ans, err := s.m.cfg.Elicit(ectx, e)
	switch {
	case ectx.Err() != nil && ctx.Err() == nil:
		return decline("no answer in time (mcp.elicit_timeout, or the tool call's own bound)")
	case err != nil:
		return decline(err.Error())
	}
	switch ans.Action {
	case ElicitAccept:
		if e.Mode == "url" {
			return &sdk.ElicitResult{Action: ElicitAccept}, nil
		}
		content := ans.Content
		if content == nil {
			content = map[string]any{} // the SDK then fills in the schema's defaults
		}
		return &sdk.ElicitResult{Action: ElicitAccept, Content: content}, nil
	case ElicitDecline, ElicitCancel:
		return &sdk.ElicitResult{Action: ans.Action}, nil
	}
	return decline(fmt.Sprintf("the answer's action %q is not accept, decline or cancel", ans.Action))
}

// questionContext bounds a question's wait: the elicit timeout, and the tool call it came
// during: it ends when the call does, and a little before the call's deadline, so that the
// server gets the decline and can still answer the call.
func questionContext(ctx, call context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ectx, cancel := context.WithTimeout(ctx, timeout)
	if call == nil {
		return ectx, cancel
	}
	if dl, ok := call.Deadline(); ok {
		margin := min(5*time.Second, time.Until(dl)/10)
		var cancelDL context.CancelFunc
		ectx, cancelDL = context.WithDeadline(ectx, dl.Add(-margin))
		prev := cancel
		cancel = func() { cancelDL(); prev() }
	}
	stop := context.AfterFunc(call, cancel)
	return ectx, func() { stop(); cancel() }
}
