package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/echogate/echogate"
)

// adminAPI is the JSON API the console uses: sessions, transcripts, turns, approvals, usage.
func (g *gateway) adminAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/sessions", func(w http.ResponseWriter, r *http.Request) {
		ss, err := g.store.ListSessions(r.Context(), limitParam(r, 100))
		writeJSON(w, ss, err)
	})
	mux.HandleFunc("GET /api/sessions/transcript", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("session")
		if key == "" {
			writeError(w, http.StatusBadRequest, "session is required: /api/sessions/transcript?session=web:abc")
			return
		}
		h, err := g.store.History(r.Context(), echogate.SessionKey(key), limitParam(r, 200))
		writeJSON(w, h, err)
	})
	mux.HandleFunc("GET /api/turns", func(w http.ResponseWriter, r *http.Request) {
		ts, err := g.store.ListTurns(r.Context(), echogate.SessionKey(r.URL.Query().Get("session")), limitParam(r, 100))
		writeJSON(w, ts, err)
	})
	mux.HandleFunc("GET /api/approvals", func(w http.ResponseWriter, r *http.Request) {
		ps, err := g.store.ListPending(r.Context(), limitParam(r, 100))
		type view struct {
			Session     echogate.SessionKey `json:"session"`
			Turn        string              `json:"turn"`
			Kind        echogate.PauseKind  `json:"kind"`
			CallID      string              `json:"call_id"`
			Tool        string              `json:"tool"`
			RequestedBy string              `json:"requested_by"`
			Prompt      echogate.MessageRef `json:"prompt"`
			CreatedAt   time.Time           `json:"created_at"`
			ExpiresAt   time.Time           `json:"expires_at,omitzero"`
		}
		out := make([]view, 0, len(ps))
		for _, p := range ps {
			out = append(out, view{p.Session, p.Turn, p.Kind, p.CallID, p.Tool, p.RequestedBy, p.Prompt, p.CreatedAt, p.ExpiresAt})
		}
		writeJSON(w, out, err)
	})
	mux.HandleFunc("GET /api/usage", func(w http.ResponseWriter, r *http.Request) {
		f := echogate.UsageFilter{Session: echogate.SessionKey(r.URL.Query().Get("session")), UserID: r.URL.Query().Get("user"),
			Turn: r.URL.Query().Get("turn")}
		if s := r.URL.Query().Get("since"); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				writeError(w, http.StatusBadRequest, "since must be an RFC 3339 time, e.g. 2026-11-30T00:00:00Z")
				return
			}
			f.Since = t
		}
		sum, err := g.store.SumUsage(r.Context(), f)
		if err != nil {
			writeJSON(w, nil, err)
			return
		}
		recs, err := g.store.ListUsage(r.Context(), f, limitParam(r, 500))
		writeJSON(w, map[string]any{"total": sum, "records": recs}, err)
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "unknown API path "+r.URL.Path)
	})
	return mux
}

func limitParam(r *http.Request, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 && n <= 10000 {
		return n
	}
	return def
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
