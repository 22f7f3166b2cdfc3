package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/echogate/echogate/admin"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/pipeline"
)

// webStored is the web channel's Config.Stored: a web session's stored transcript and pending
// approval, masked as what the pipeline posts is (secrets in text by the redactor, secret-looking
// arguments by RedactArgs), so the chat shows a session's earlier turns after a restart.
func (g *gateway) webStored(ctx context.Context, session string, limit int) (web.Stored, error) {
	key := echogate.SessionKey(echogate.PlatformWeb + ":" + session)
	msgs, err := g.store.History(ctx, key, limit)
	if err != nil {
		return web.Stored{}, fmt.Errorf("transcript of %s: %w", key, err)
	}
	for i := range msgs {
		m := &msgs[i].Message
		if g.redactor != nil {
			m.Content = g.redactor.Redact(m.Content)
		}
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = pipeline.RedactArgs(m.ToolCalls[j].Arguments, admin.MaxArgsShown)
		}
	}
	st := web.Stored{Messages: msgs}
	pend, err := g.store.GetPending(ctx, key)
	switch {
	case errors.Is(err, echogate.ErrNotFound):
	case err != nil:
		return web.Stored{}, fmt.Errorf("pending approval of %s: %w", key, err)
	case pend.Kind == echogate.PauseApproval:
		st.Pending = append(st.Pending, web.Pending{PromptID: pend.Prompt.ID, CallID: pend.CallID, Tool: pend.Tool,
			Args: admin.PendingArgs(pend), Turn: pend.Turn, RequestedBy: g.personName(pend.RequestedBy)})
	}
	return st, nil
}

// personName names the person of a qualified id as the pipeline's texts do.
func (g *gateway) personName(id string) string {
	if g.pipeline == nil {
		return id
	}
	return g.pipeline.PersonName(id)
}
