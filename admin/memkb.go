package admin

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/memory"
)

// The console's knowledge and memory actions (the Knowledge and Memory tabs):
//
//	GET  /api/knowledge/search  ?q=&limit= → passages, best first (hybrid search, as the model sees it)
//	POST /api/knowledge/delete  {"id"} → the removed document
//	POST /api/knowledge/upload  {"name", "content": base64} → {report, document}: add or replace a file
//	POST /api/memory/forget     {"id"} → the forgotten memory
//	POST /api/memory/edit       {"id", "text"} → the memory that replaces it (same owner, kind, pin)
func (a *API) memkbAPI(mux Mux) {
	mux.HandleFunc("GET /api/knowledge/search", a.handleKnowledgeSearch)
	mux.HandleFunc("POST /api/knowledge/delete", a.handleKnowledgeDelete)
	mux.HandleFunc("POST /api/knowledge/upload", a.handleKnowledgeUpload)
	mux.HandleFunc("POST /api/memory/forget", a.handleMemoryForget)
	mux.HandleFunc("POST /api/memory/edit", a.handleMemoryEdit)
}

const knowledgeOff = "the knowledge base is off on this gateway: set knowledge.enabled: true in the config and add documents with `echogate knowledge add`"

const memoryOff = "memory is off on this gateway: set memory.enabled: true in the config to keep long-term memories (it is opt-in)"

func (a *API) handleKnowledgeSearch(w http.ResponseWriter, r *http.Request) {
	if !(a.Knowledge != nil) {
		WriteError(w, http.StatusNotFound, knowledgeOff)
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		WriteError(w, http.StatusBadRequest, "q is required: /api/knowledge/search?q=how+do+we+deploy")
		return
	}
	ps, keywordOnly, err := a.Knowledge.Search(r.Context(), q, limitParam(r, 10))
	if err != nil {
		WriteJSON(w, nil, WrapErr("search knowledge", err))
		return
	}
	WriteJSON(w, map[string]any{"passages": nonNil(ps), "keyword_only": keywordOnly}, nil)
}

// idBody is a console action's body.
type idBody struct {
	ID   string `json:"id"`
	Text string `json:"text,omitempty"`
}

// readIDBody decodes a console action's JSON body; ok false means the error was written.
func readIDBody(w http.ResponseWriter, r *http.Request, shape string) (idBody, bool) {
	var b idBody
	if !web.ReadMutation(w, r, http.MethodPost, 64<<10, &b, shape) {
		return b, false
	}
	if strings.TrimSpace(b.ID) == "" {
		WriteError(w, http.StatusBadRequest, "id is required: send "+shape)
		return b, false
	}
	return b, true
}

func (a *API) handleKnowledgeDelete(w http.ResponseWriter, r *http.Request) {
	if !(a.Knowledge != nil) {
		WriteError(w, http.StatusNotFound, knowledgeOff)
		return
	}
	b, ok := readIDBody(w, r, `{"id": "d_…"}`)
	if !ok {
		return
	}
	doc, err := a.Knowledge.Remove(r.Context(), b.ID)
	if errors.Is(err, echogate.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "no document "+b.ID+": GET /api/knowledge lists them")
		return
	}
	WriteJSON(w, doc, WrapErr("delete knowledge document", err))
}

func (a *API) handleMemoryForget(w http.ResponseWriter, r *http.Request) {
	if !(a.Memory != nil) {
		WriteError(w, http.StatusNotFound, memoryOff)
		return
	}
	b, ok := readIDBody(w, r, `{"id": "m_…"}`)
	if !ok {
		return
	}
	m, err := a.Memory.Forget(r.Context(), nil, b.ID)
	if errors.Is(err, echogate.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "no memory "+b.ID+": GET /api/memory lists them")
		return
	}
	WriteJSON(w, m, WrapErr("forget memory", err))
}

// handleMemoryEdit replaces a memory's text: the new memory keeps the owner, kind, importance
// and pin, and the old one is forgotten once the new one is stored.
func (a *API) handleMemoryEdit(w http.ResponseWriter, r *http.Request) {
	if !(a.Memory != nil) {
		WriteError(w, http.StatusNotFound, memoryOff)
		return
	}
	b, ok := readIDBody(w, r, `{"id": "m_…", "text": "the corrected memory"}`)
	if !ok {
		return
	}
	if strings.TrimSpace(b.Text) == "" {
		WriteError(w, http.StatusBadRequest, `text is required: send {"id": "m_…", "text": "the corrected memory"} (use POST /api/memory/forget to delete)`)
		return
	}
	old, err := a.memoryByID(r, b.ID)
	if err != nil {
		WriteError(w, http.StatusNotFound, "no memory "+b.ID+": GET /api/memory lists them")
		return
	}
	m, err := a.Memory.Remember(r.Context(), memory.Note{Owner: old.Owner, Text: b.Text, Kind: old.Kind, Importance: old.Importance, Pinned: old.Pinned})
	if errors.Is(err, memory.ErrInvalid) {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		WriteJSON(w, nil, WrapErr("edit memory", err))
		return
	}
	if m.ID != old.ID {
		if _, err := a.Memory.Forget(r.Context(), nil, old.ID); err != nil && !errors.Is(err, echogate.ErrNotFound) {
			WriteJSON(w, nil, WrapErr("edit memory: forget the old text", err))
			return
		}
	}
	WriteJSON(w, m, nil)
}

func (a *API) memoryByID(r *http.Request, id string) (memrec.Memory, error) {
	mg, ok := a.Store.(interface {
		GetMemory(ctx context.Context, id string) (memrec.Memory, error)
	})
	if !ok {
		return memrec.Memory{}, echogate.ErrNotFound
	}
	return mg.GetMemory(r.Context(), id)
}
