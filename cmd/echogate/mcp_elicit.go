package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/mcp"
)

// mcpElicitor puts MCP servers' questions (elicitation) to the person whose turn made the call,
// through the pipeline (pipeline.Elicit). The Manager is made before the pipeline, so the
// pipeline is given to it once made (wire); a question before then is declined.
type mcpElicitor struct {
	p atomic.Pointer[pipeline.Pipeline]
}

func (e *mcpElicitor) wire(p *pipeline.Pipeline) { e.p.Store(p) }

// elicit is the Manager's mcp.Elicitor.
func (e *mcpElicitor) elicit(ctx context.Context, el mcp.Elicitation) (mcp.ElicitAnswer, error) {
	p := e.p.Load()
	if p == nil {
		return mcp.ElicitAnswer{}, errors.New("the gateway is not taking questions yet")
	}
	from := "MCP server " + el.Server
	r, err := p.Elicit(ctx, pipeline.Question{From: from, Tool: el.Tool, Caller: el.Caller, Mode: el.Mode, Message: el.Message, Schema: el.Schema, Link: el.URL})
	if err != nil {
		return mcp.ElicitAnswer{}, err
	}
	return mcp.ElicitAnswer{Action: r.Action, Content: r.Content}, nil
}
