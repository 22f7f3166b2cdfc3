package admin

import (
	"net/http"
	"strconv"
	"strings"
)

// maxNameIDs bounds the ids of one GET /api/names.
const maxNameIDs = 500

// handleNames answers GET /api/names?ids=slack:U1,discord:42 with {"names": {id: name}} for
// the ids whose display name the gateway has seen (unknown ids are left out), so the console
// can show "ann (slack:U1)".
func (a *API) handleNames(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("ids")
	if strings.TrimSpace(raw) == "" {
		WriteError(w, http.StatusBadRequest, "ids is required: /api/names?ids=slack:U123,discord:4567 (qualified user ids, comma separated)")
		return
	}
	var ids []string
	for _, id := range strings.Split(raw, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) > maxNameIDs {
		WriteError(w, http.StatusBadRequest, "too many ids ("+strconv.Itoa(len(ids))+"): ask for at most "+strconv.Itoa(maxNameIDs)+" at a time")
		return
	}
	WriteJSON(w, map[string]any{"names": a.Names(ids)}, nil)
}
