package main

import (
	"context"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

// observeNames wraps a channel's sink: every inbound event that carries its author's display
// name teaches the gateway's name directory (qualified id → name). The event goes on unchanged.
func (g *gateway) observeNames(sink channels.Sink) channels.Sink {
	return func(ctx context.Context, ev echogate.InboundEvent) error {
		if ev.Actor.ID != "" && ev.Actor.Name != "" && !ev.Actor.IsSelf {
			g.names.Set(ev.Actor.QualifiedID(ev.Conversation.Platform), ev.Actor.Name)
		}
		return sink(ctx, ev)
	}
}
