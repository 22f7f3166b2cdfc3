package pipeline

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/extract"
	"github.com/echogate/echogate/internal/netguard"
	"github.com/echogate/echogate/tools"
)

// Defaults of FilesConfig.
const (
	DefaultFileCacheBytes   = 64 << 20
	DefaultFileCacheEntries = 256
	DefaultImageMaxBytes    = 5 << 20
	DefaultFileMaxBytes     = 20 << 20
	// fileHistoryMessages is how far back in the transcript files are looked for.
	fileHistoryMessages = 500
)

// FilesConfig configures attachment handling. The zero value means the defaults.
type FilesConfig struct {
	// MaxBytes is the largest file read_file downloads (files.max_bytes); the ContextStage tells
	// the model up front which attachments are over it. Default 20 MiB.
	MaxBytes int64
	// ImageMaxBytes is the largest image sent to a vision-capable model; default 5 MiB.
	ImageMaxBytes int64
	// CacheBytes and CacheEntries bound the cache of extracted text (keyed by content hash);
	// defaults 64 MiB and 256.
	CacheBytes   int64
	CacheEntries int
	// Vision reports whether a model accepts image parts; nil means DefaultVision.
	Vision func(model string) bool
}

// DefaultVision reports whether a model name belongs to a family known to accept images:
// gpt-4o, gpt-4.1, gpt-4-turbo, gpt-5, o1, o3, o4-mini (not o1-mini/o3-mini), Claude 3+, Gemini, Llama 3.2 Vision, LLaVA,
// Pixtral, Qwen-VL, MiniCPM-V and names containing "vision". Configure models.vision when a
// model is missed or wrongly matched.
func DefaultVision(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // openrouter-style "openai/gpt-4o"
	}
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-4-vision", "gpt-5", "chatgpt-4o", "o1-20", "o1-pro", "o3-20", "o3-pro", "o4-mini",
		"claude-3", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4", "claude-4", "gemini", "llava", "bakllava",
		"pixtral", "qwen-vl", "qwen2-vl", "qwen2.5-vl", "qwen2.5vl", "minicpm-v", "llama3.2-vision", "llama-3.2-11b-vision",
		"llama-3.2-90b-vision", "gemma3", "gemma-3", "vision"} {
		if m == "o1" || m == "o3" || strings.HasPrefix(m, p) || (len(p) > 4 && strings.Contains(m, p)) {
			return true
		}
	}
	return false
}

// historyReader is what Files needs of the store.
type historyReader interface {
	History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error)
}

// Files is the gateway's view of chat attachments: it lists a conversation's files from the
// transcript, downloads them through the platform's replier and extracts their text, caching
// extracted text by content hash. read_file uses it (it satisfies builtin.FileSource), and the
// ContextStage uses it to hand images to vision-capable models. It is safe for concurrent use.
type Files struct {
	cfg      FilesConfig
	store    historyReader
	repliers map[string]Replier

	mu    sync.Mutex
	ll    *list.List               // of *cacheEntry, most recent first
	items map[string]*list.Element // doc key → entry
	ids   map[string]string        // platform:attachment id → content hash (bounded with the cache)
	bytes int64
}

type cacheEntry struct {
	key  string
	id   string // platform:attachment id that led here
	doc  extract.Document
	size int64
}

// NewFiles builds the attachment service over the transcript store and the platforms'
// repliers (those that implement Download can serve files). It does no I/O.
func NewFiles(cfg FilesConfig, store historyReader, repliers map[string]Replier) (*Files, error) {
	if store == nil {
		return nil, errors.New("pipeline: files: no store")
	}
	if cfg.MaxBytes < 0 || cfg.ImageMaxBytes < 0 || cfg.CacheBytes < 0 || cfg.CacheEntries < 0 {
		return nil, fmt.Errorf("pipeline: files: max_bytes %d, image_max_bytes %d and cache sizes must not be negative (0 means the default)", cfg.MaxBytes, cfg.ImageMaxBytes)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultFileMaxBytes
	}
	if cfg.ImageMaxBytes == 0 {
		cfg.ImageMaxBytes = DefaultImageMaxBytes
	}
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = DefaultFileCacheBytes
	}
	if cfg.CacheEntries == 0 {
		cfg.CacheEntries = DefaultFileCacheEntries
	}
	if cfg.Vision == nil {
		cfg.Vision = DefaultVision
	}
	return &Files{cfg: cfg, store: store, repliers: repliers, ll: list.New(), items: map[string]*list.Element{}, ids: map[string]string{}}, nil
}

// Files lists the files attached in the caller's conversation (user messages' attachments in
// the transcript), most recent first, each once. It blocks on the store.
func (f *Files) Files(ctx context.Context, c tools.Caller) ([]echogate.Attachment, error) {
	hist, err := f.store.History(ctx, c.Session, fileHistoryMessages)
	if err != nil {
		return nil, fmt.Errorf("pipeline: files of %s: %w", c.Session, err)
	}
	seen := map[string]bool{}
	var out []echogate.Attachment
	for i := len(hist) - 1; i >= 0; i-- {
		m := hist[i].Message
		if m.Role != echogate.RoleUser {
			continue
		}
		for j := len(m.Attachments) - 1; j >= 0; j-- {
			a := m.Attachments[j]
			k := a.ID + "\x00" + a.URL
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, a)
		}
	}
	return out, nil
}

// platformOf returns the platform of a tools.Caller channel ("slack:C123" → "slack").
func platformOf(channel string) string {
	p, _, _ := strings.Cut(channel, ":")
	return p
}

func (f *Files) downloaderFor(platform string) (Downloader, error) {
	rep := f.repliers[platform]
	var d Downloader
	if rep != nil {
		d = CapsOf(rep).Downloader
	}
	if d == nil {
		return nil, fmt.Errorf("pipeline: files: %s does not serve file downloads", platform)
	}
	return d, nil
}

// Read downloads att through the caller's platform (at most maxBytes) and extracts its text
// with opt. Extracted text is cached by content hash (and the attachment's id remembered), so
// reading a file again, or the same content sent twice, costs neither a download nor an
// extraction. It blocks on the download; errors wrap echogate.ErrTooLarge, the internal/extract
// sentinels, or the platform's download error.
func (f *Files) Read(ctx context.Context, c tools.Caller, att echogate.Attachment, maxBytes int64, opt extract.Options) (extract.Document, error) {
	platform := platformOf(c.Channel)
	idKey := platform + ":" + att.ID
	suffix := fmt.Sprintf("#%d+%d", max(opt.FirstPage, 1), opt.MaxPages)
	if doc, ok := f.cachedByID(idKey, suffix); ok {
		return doc, nil
	}
	d, err := f.downloaderFor(platform)
	if err != nil {
		return extract.Document{}, err
	}
	data, mt, err := d.Download(ctx, att, maxBytes)
	if err != nil {
		return extract.Document{}, err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if doc, ok := f.get(hash+suffix, idKey); ok {
		return doc, nil
	}
	declared := mt
	if declared == "" || declared == "application/octet-stream" {
		declared = att.MIME
	}
	doc, err := extract.Extract(ctx, data, att.Name, declared, opt)
	if err != nil {
		return extract.Document{}, err
	}
	f.put(hash+suffix, idKey, doc)
	return doc, nil
}

func (f *Files) cachedByID(idKey, suffix string) (extract.Document, bool) {
	f.mu.Lock()
	hash, ok := f.ids[idKey]
	f.mu.Unlock()
	if !ok {
		return extract.Document{}, false
	}
	return f.get(hash+suffix, idKey)
}

func (f *Files) get(key, idKey string) (extract.Document, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	el, ok := f.items[key]
	if !ok {
		return extract.Document{}, false
	}
	f.ll.MoveToFront(el)
	hash, _, _ := strings.Cut(key, "#")
	f.ids[idKey] = hash
	return el.Value.(*cacheEntry).doc, true
}

func (f *Files) put(key, idKey string, doc extract.Document) {
	size := doc.Size()
	if size > f.cfg.CacheBytes {
		return // larger than the whole cache: not worth evicting everything for
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	hash, _, _ := strings.Cut(key, "#")
	f.ids[idKey] = hash
	if el, ok := f.items[key]; ok {
		f.ll.MoveToFront(el)
		return
	}
	f.items[key] = f.ll.PushFront(&cacheEntry{key: key, id: idKey, doc: doc, size: size})
	f.bytes += size
	for f.ll.Len() > f.cfg.CacheEntries || f.bytes > f.cfg.CacheBytes {
		el := f.ll.Back()
		e := el.Value.(*cacheEntry)
		f.ll.Remove(el)
		delete(f.items, e.key)
		if h, _, _ := strings.Cut(e.key, "#"); h != hash && f.ids[e.id] == h {
			delete(f.ids, e.id)
		}
		f.bytes -= e.size
	}
}

// cacheStats returns the cache's entry count and bytes (tests).
func (f *Files) cacheStats() (entries int, bytes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ll.Len(), f.bytes
}

// imageTypes are the image formats vision models take.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// isImageAttachment reports an image by its stated type, or by its name when the type is
// missing or generic.
func isImageAttachment(a echogate.Attachment) bool {
	mt := extract.MediaType(a.MIME)
	if strings.HasPrefix(mt, "image/") {
		return true
	}
	return (mt == "" || mt == "application/octet-stream") && strings.HasPrefix(extract.TypeByExt(a.Name), "image/")
}

// prepareAttachments readies the attachments of a new user message for the model, for a turn
// that will use model: images become image parts (data URLs) when the model can see them, else
// a note tells the model an image was attached; files over the size limit get a note saying
// they cannot be read. The returned message is for the model request only: the transcript
// keeps the attachments' metadata, never their content. Failures become notes, never errors.
func (f *Files) prepareAttachments(ctx context.Context, platform, model string, m echogate.Message) echogate.Message {
	if len(m.Attachments) == 0 {
		return m
	}
	var notes []string
	vision := f.cfg.Vision(model)
	for _, a := range m.Attachments {
		name := a.Name
		if name == "" {
			name = a.ID
		}
		if !isImageAttachment(a) {
			if a.Size > f.cfg.MaxBytes {
				notes = append(notes, fmt.Sprintf("[file %s is %s; the limit is %s (files.max_bytes): it cannot be read]", name, netguard.FormatBytes(a.Size), netguard.FormatBytes(f.cfg.MaxBytes)))
			}
			continue
		}
		if !vision {
			notes = append(notes, fmt.Sprintf("[image attached: %s — the current model (%s) cannot see images]", name, model))
			continue
		}
		if a.Size > f.cfg.ImageMaxBytes {
			notes = append(notes, fmt.Sprintf("[image attached: %s — %s is over the %s image limit (files.image_max_bytes), so it was not shown to you]", name, netguard.FormatBytes(a.Size), netguard.FormatBytes(f.cfg.ImageMaxBytes)))
			continue
		}
		img, err := f.image(ctx, platform, a)
		if err != nil {
			notes = append(notes, fmt.Sprintf("[image attached: %s — it could not be shown to you: %s]", name, shortErr(err)))
			continue
		}
		m.Images = append(append([]echogate.ImagePart(nil), m.Images...), img)
	}
	if len(notes) > 0 {
		m.Content = strings.TrimSpace(m.Content + "\n" + strings.Join(notes, "\n"))
	}
	return m
}

// image downloads one image and encodes it as a data URL, checking the content really is one
// of the accepted formats.
func (f *Files) image(ctx context.Context, platform string, a echogate.Attachment) (echogate.ImagePart, error) {
	d, err := f.downloaderFor(platform)
	if err != nil {
		return echogate.ImagePart{}, err
	}
	data, _, err := d.Download(ctx, a, f.cfg.ImageMaxBytes)
	if err != nil {
		if errors.Is(err, echogate.ErrTooLarge) {
			return echogate.ImagePart{}, fmt.Errorf("it is over the %s image limit (files.image_max_bytes)", netguard.FormatBytes(f.cfg.ImageMaxBytes))
		}
		return echogate.ImagePart{}, err
	}
	mt := extract.MediaType(http.DetectContentType(data))
	if !imageTypes[mt] {
		return echogate.ImagePart{}, fmt.Errorf("its content is %s, not a PNG, JPEG, GIF or WebP image", mt)
	}
	return echogate.ImagePart{URL: "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data), MIME: mt}, nil
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// prepareAttachments gives the model the new user messages' attachments (Deps.Files): see
// Files.prepareAttachments. The model is the session's /model choice or the default; a router
// that sends attachment turns elsewhere is accounted for by the configured Vision function.
func (s *ContextStage) prepareAttachments(ctx context.Context, t *turn, msgs []echogate.Message) []echogate.Message {
	if s.files == nil {
		return msgs
	}
	model := s.overrides.get(t.key)
	if model == "" {
		model = t.prof.Model
	}
	var out []echogate.Message
	for i, m := range msgs {
		if m.Role != echogate.RoleUser || len(m.Attachments) == 0 {
			continue
		}
		if out == nil {
			out = append([]echogate.Message(nil), msgs...)
		}
		out[i] = s.files.prepareAttachments(ctx, t.ev.Conversation.Platform, model, m)
	}
	if out == nil {
		return msgs
	}
	return out
}
