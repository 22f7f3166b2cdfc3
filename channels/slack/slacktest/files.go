package slacktest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// File is a file hosted by the fake, as a user uploaded it.
type File struct {
	ID   string // default a fresh "F…"
	Name string // file name, e.g. "report.pdf"
	MIME string // Slack's mimetype, e.g. "application/pdf"
	Data []byte
	// Size is the size stated in events; 0 means len(Data). A larger value models a file whose
	// event says it is big (the gateway must refuse it before downloading).
	Size int64
}

// AddFile hosts f under a url_private_download URL that, like Slack's, needs the bot token:
// with "Authorization: Bearer <bot token>" the file is served with its mimetype; without it (or
// with another token) the answer is Slack's HTML sign-in page with status 200, which is what a
// token without the files:read scope gets. It returns the file object for an event's "files"
// list (see WithFiles).
func (s *Server) AddFile(f File) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileSeq++
	if f.ID == "" {
		f.ID = fmt.Sprintf("F%08d", s.fileSeq)
	}
	if f.Size == 0 {
		f.Size = int64(len(f.Data))
	}
	if f.MIME == "" {
		f.MIME = "application/octet-stream"
	}
	c := f
	s.files[f.ID] = &c
	base := s.srv.URL + "/files-pri/" + s.opts.TeamID + "-" + f.ID + "/"
	ext := ""
	if i := strings.LastIndexByte(f.Name, '.'); i >= 0 {
		ext = f.Name[i+1:]
	}
	return map[string]any{
		"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.MIME, "filetype": ext, "size": f.Size,
		"mode": "hosted", "is_external": false, "user": "", "created": s.opts.Now().Unix(),
		"url_private": base + f.Name, "url_private_download": base + "download/" + f.Name,
	}
}

// WithFiles returns inner (a message or app_mention event) carrying files, as Slack sends a
// post with uploads: a message event gets subtype "file_share".
func WithFiles(inner map[string]any, files ...map[string]any) map[string]any {
	out := make(map[string]any, len(inner)+2)
	for k, v := range inner {
		out[k] = v
	}
	list := make([]any, len(files))
	for i, f := range files {
		list[i] = f
	}
	out["files"] = list
	if out["type"] == "message" {
		out["subtype"] = "file_share"
	}
	return out
}

// FileDownloads returns how often the file was downloaded with the bot token.
func (s *Server) FileDownloads(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[id]
}

// signInPage is what files.slack.com answers to a request without a valid token.
const signInPage = `<!DOCTYPE html><html><head><title>Slack</title></head><body><h1>Sign in to your workspace</h1></body></html>`

// serveFile serves /files-pri/<team>-<id>/[download/]<name>.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/files-pri/")
	key, _, _ := strings.Cut(rest, "/")
	_, id, _ := strings.Cut(key, "-")
	s.mu.Lock()
	f, ok := s.files[id]
	authorized := r.Header.Get("Authorization") == "Bearer "+s.opts.BotToken
	if ok && authorized {
		s.downloads[id]++
	}
	s.mu.Unlock()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !authorized {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(signInPage))
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.MIME)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	_, _ = w.Write(f.Data)
}
