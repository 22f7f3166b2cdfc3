package admin

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/knowledge"
)

// maxUploadBytes bounds one console upload (the decoded file).
const maxUploadBytes = 20 << 20

// uploadBody is POST /api/knowledge/upload's body. The file travels base64-encoded in JSON:
// state-changing endpoints take JSON only (a cross-site form cannot send it).
type uploadBody struct {
	Name    string `json:"name"`
	Content string `json:"content"`
}

// handleKnowledgeUpload stores the file under <data_dir>/knowledge/<name> and ingests it, as
// `echogate knowledge add` does: the same name again replaces that document (unchanged content
// is skipped).
func (a *API) handleKnowledgeUpload(w http.ResponseWriter, r *http.Request) {
	if !(a.Knowledge != nil) {
		WriteError(w, http.StatusNotFound, knowledgeOff)
		return
	}
	const shape = `{"name": "handbook.pdf", "content": "<base64 of the file>"} (files over ` +
		`the upload limit: echogate knowledge add PATH)`
	var b uploadBody
	if !web.ReadMutation(w, r, http.MethodPost, maxUploadBytes*4/3+4096, &b, shape) {
		return
	}
	name := filepath.Base(strings.TrimSpace(b.Name))
	if name == "." || name == "/" || strings.HasPrefix(name, ".") || !knowledge.Supported(name) {
		WriteError(w, http.StatusBadRequest, fmt.Sprintf("name %q: give a file name ending in .md, .txt, .html or .pdf", b.Name))
		return
	}
	raw, err := base64.StdEncoding.DecodeString(b.Content)
	if err != nil || len(raw) == 0 {
		WriteError(w, http.StatusBadRequest, "content must be the file's bytes in standard base64, and not empty: send "+shape)
		return
	}
	dir := filepath.Join(a.cfg.DataDir, "knowledge")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		WriteJSON(w, nil, WrapErr("upload: create "+dir, err))
		return
	}
	path := filepath.Join(dir, name)
	_, statErr := os.Stat(path)
	existed := statErr == nil
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		WriteJSON(w, nil, WrapErr("upload", err))
		return
	}
	_, werr := tmp.Write(raw)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		WriteJSON(w, nil, WrapErr("upload: write "+path, errors.Join(werr, cerr)))
		return
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		WriteJSON(w, nil, WrapErr("upload: write "+path, err))
		return
	}
	rep, err := a.Knowledge.Ingest(r.Context(), []string{path}, nil)
	if err != nil {
		if !existed {
			os.Remove(path) // a file the knowledge base could not take is not kept
		}
		WriteError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	ds, err := a.Knowledge.List(r.Context(), 0)
	var doc any
	for _, d := range ds {
		if d.Source == path {
			doc = d
		}
	}
	WriteJSON(w, map[string]any{"report": rep, "document": doc}, WrapErr("upload: list", err))
}
