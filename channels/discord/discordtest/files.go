package discordtest

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Attachment is a file on a user's message, served by the fake's CDN at
// URL/attachments/<channel>/<id>/<filename>?ex=…&is=…&hm=… (signed like Discord's, no
// credentials needed).
type Attachment struct {
	ID          string // default a fresh snowflake
	Filename    string
	ContentType string // e.g. "application/pdf"; empty leaves content_type out, as Discord may
	Data        []byte
	// Size is the size stated in MESSAGE_CREATE; 0 means len(Data). A larger value models an
	// attachment the gateway must refuse before downloading.
	Size int64
}

// SendWithFiles dispatches MESSAGE_CREATE for a message by user with attachments: a DM when
// guildID is empty (channelID is then ignored), else a guild message in channelID (mentioning
// the bot when mentionBot). The files are served by the fake's CDN.
func (s *Server) SendWithFiles(guildID, channelID string, user User, text string, mentionBot bool, files ...Attachment) Message {
	s.mu.Lock()
	if guildID == "" {
		channelID = s.dmChannelLocked(user.ID)
	} else {
		s.guildOf[channelID] = guildID
	}
	s.mu.Unlock()
	return s.post(user, guildID, channelID, text, "", mentionBot, files)
}

// AttachmentDownloads returns how often the CDN served the attachment.
func (s *Server) AttachmentDownloads(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[id]
}

// hostLocked assigns ids and sizes and registers the files with the CDN.
func (s *Server) hostLocked(files []Attachment) []Attachment {
	if len(files) == 0 {
		return nil
	}
	out := make([]Attachment, len(files))
	for i, f := range files {
		if f.ID == "" {
			f.ID = s.newID()
		}
		if f.Size == 0 {
			f.Size = int64(len(f.Data))
		}
		c := f
		s.files[f.ID] = &c
		out[i] = f
	}
	return out
}

func (s *Server) wireAttachment(channelID string, a Attachment) map[string]any {
	u := fmt.Sprintf("%s/attachments/%s/%s/%s?ex=ffffffff&is=00000000&hm=%x", s.URL, channelID, a.ID, url.PathEscape(a.Filename), len(a.Filename))
	w := map[string]any{"id": a.ID, "filename": a.Filename, "size": a.Size, "url": u, "proxy_url": u}
	if a.ContentType != "" {
		w["content_type"] = a.ContentType
	}
	return w
}

func (s *Server) serveAttachment(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	f, ok := s.files[id]
	if ok {
		s.downloads[id]++
	}
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("hm") == "" {
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
		return
	}
	ct := f.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	_, _ = w.Write(f.Data)
}
