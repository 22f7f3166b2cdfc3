package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

// maxNameIDs bounds the ids of one GET /api/names.
const maxNameIDs = 500

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

// handleNames answers GET /api/names?ids=slack:U1,discord:42 with {"names": {id: name}} for
// the ids whose display name the gateway has seen (unknown ids are left out), so the console
// can show "ann (slack:U1)".
func (g *gateway) handleNames(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("ids")
	if strings.TrimSpace(raw) == "" {
		writeError(w, http.StatusBadRequest, "ids is required: /api/names?ids=slack:U123,discord:4567 (qualified user ids, comma separated)")
		return
	}
	var ids []string
	for _, id := range strings.Split(raw, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) > maxNameIDs {
		writeError(w, http.StatusBadRequest, "too many ids ("+strconv.Itoa(len(ids))+"): ask for at most "+strconv.Itoa(maxNameIDs)+" at a time")
		return
	}
	writeJSON(w, map[string]any{"names": g.names.Lookup(ids)}, nil)
}
