// Package knowledge is the gateway's knowledge base: Markdown, text, HTML and PDF files chunked
// on their structure (sections, paragraphs) with overlap, embedded, and searched by hybrid
// retrieval (vector + full text, fused by reciprocal rank). Service.ContextSection injects the
// top passages into a turn's system prompt within a token budget, with citation ids; the
// knowledge_search tool and `echogate knowledge search` use Service.Search.
//
// Ingestion is resumable and incremental: every file is committed on its own (with all its
// chunks, atomically), a file whose content hash is unchanged is skipped without embedding
// anything, and a changed file replaces its chunks.
package knowledge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

var (
	// ErrInvalid is wrapped for bad arguments and configuration.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnsupported is wrapped for files the knowledge base cannot read.
	ErrUnsupported = errors.New("unsupported document")
)

// Store is what the knowledge base persists; storage/sqlite and storage/postgres implement it
// (checked by storage/storagetest.RunKnowledge). Every method blocks on I/O and honours ctx.
type Store interface {
	GetDocument(ctx context.Context, idOrSource string) (memrec.Document, error)
	PutDocument(ctx context.Context, doc memrec.Document, chunks []memrec.Chunk) error
	ListDocuments(ctx context.Context, limit int) ([]memrec.Document, error)
	DeleteDocument(ctx context.Context, idOrSource string) error
	SearchChunksVector(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error)
	SearchChunksText(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error)
}

// Embedder turns texts into vectors (internal/embed.Embedder satisfies it).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, echogate.Usage, error)
}

// Config tunes the knowledge base. The zero value of every field means its documented default.
type Config struct {
	ChunkSize     int     // bytes per chunk; default 1200
	ChunkOverlap  int     // bytes repeated between consecutive chunks of a section; default 150
	TopK          int     // passages injected per turn; default 4
	MinSimilarity float64 // vector hits below this cosine similarity are ignored; default 0.2
	MaxFileBytes  int64   // larger files are refused; default 50 MiB
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ReportUsage receives the embedding usage of searches and ingestion.
	ReportUsage func(ctx context.Context, r echogate.UsageRecord)
	// KeywordOnly is called when a search ran without vectors (embedding endpoint down).
	KeywordOnly func()
	// EmbedModel names the embedder ("provider:model@dims"); it is recorded with every
	// document's vectors. A document whose vectors came from another embedder is re-embedded
	// when it is added again (Reembed does it for all), and until then its vectors are never
	// compared with this embedder's queries (full-text search still finds it). Empty: nothing
	// is recorded or compared.
	EmbedModel string
}

// DemoEmbedModel prefixes the EmbedModel of the offline demo embedder, whose vectors hash words
// and carry no meaning.
const DemoEmbedModel = "demo:"

// IsDemoEmbedModel reports whether model names the offline demo embedder.
func IsDemoEmbedModel(model string) bool { return strings.HasPrefix(model, DemoEmbedModel) }

// Service is the knowledge base. It is safe for concurrent use.
type Service struct {
	cfg   Config
	store Store
	emb   Embedder
	log   *slog.Logger
}

// New validates cfg and returns the service; emb may be nil (full-text search only, and
// ingestion stores chunks without vectors). It does no I/O.
func New(cfg Config, store Store, emb Embedder, log *slog.Logger) (*Service, error) {
	if store == nil {
		return nil, fmt.Errorf("knowledge: %w: no store", ErrInvalid)
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = 1200
	}
	if cfg.ChunkOverlap == 0 {
		cfg.ChunkOverlap = 150
	}
	switch {
	case cfg.ChunkSize < 200 || cfg.ChunkSize > 20000:
		return nil, fmt.Errorf("knowledge: %w: chunk size %d must be between 200 and 20000 bytes (knowledge.chunk_size)", ErrInvalid, cfg.ChunkSize)
	case cfg.ChunkOverlap < 0 || cfg.ChunkOverlap >= cfg.ChunkSize/2:
		return nil, fmt.Errorf("knowledge: %w: chunk overlap %d must be between 0 and half the chunk size (knowledge.chunk_overlap)", ErrInvalid, cfg.ChunkOverlap)
	case cfg.MinSimilarity < 0 || cfg.MinSimilarity >= 1:
		return nil, fmt.Errorf("knowledge: %w: min similarity %v must be in [0, 1) (knowledge.min_similarity)", ErrInvalid, cfg.MinSimilarity)
	}
	if cfg.TopK <= 0 {
		cfg.TopK = 4
	}
	if cfg.MinSimilarity == 0 {
		cfg.MinSimilarity = 0.2
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 50 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, store: store, emb: emb, log: log}, nil
}

// DocID is the stable id of a source.
func DocID(source string) string {
	h := sha256.Sum256([]byte(source))
	return "d_" + hex.EncodeToString(h[:8])
}

// Progress reports ingestion of one file.
type Progress struct {
	Path    string
	Index   int // 1-based
	Total   int
	Status  string // "added", "updated", "reembedded", "unchanged", "failed"
	Chunks  int
	Err     error
	Elapsed time.Duration
}

// Report sums an ingestion.
type Report struct {
	Added, Updated, Unchanged, Failed int
	Reembedded                        int // unchanged files whose vectors came from another embedder
	Chunks                            int // chunks written
	Embedded                          int // chunks embedded
	// Skipped are the files under the folders given that are of a type it cannot read
	// (not Supported), sorted; hidden entries are not counted.
	Skipped []string
}

// Ingest adds the files and folders (recursively; only supported types, hidden entries skipped)
// to the knowledge base, one file at a time, calling progress after each. An unchanged file
// (same content hash) is skipped without embedding; a changed one replaces its chunks. A file
// that fails is reported and the rest go on; the returned error joins the failures (nil when
// every file made it). Interrupting (ctx) keeps every file already committed: running it again
// resumes. It blocks on file I/O, the embedding endpoint and the store.
func (s *Service) Ingest(ctx context.Context, paths []string, progress func(Progress)) (Report, error) {
	var files, skipped []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return Report{}, fmt.Errorf("knowledge: add %s: %w", p, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return Report{}, fmt.Errorf("knowledge: add %s: %w", p, err)
		}
		if !fi.IsDir() {
			if !Supported(abs) {
				return Report{}, fmt.Errorf("knowledge: add %s: %w: use .md, .txt, .html or .pdf files", p, ErrUnsupported)
			}
			files = append(files, abs)
			continue
		}
		err = filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != abs && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case d.IsDir():
			case Supported(path):
				files = append(files, path)
			default:
				skipped = append(skipped, path)
			}
			return nil
		})
		if err != nil {
			return Report{}, fmt.Errorf("knowledge: add %s: %w", p, err)
		}
	}
	sort.Strings(files)
	files = dedupe(files)
	sort.Strings(skipped)
	var (
		rep  = Report{Skipped: dedupe(skipped)}
		errs []error
	)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("knowledge: add: interrupted after %d of %d files (run it again to resume): %w", i, len(files), err)
		}
		start := time.Now()
		status, chunks, embedded, err := s.ingestFile(ctx, f)
		rep.Embedded += embedded
		switch {
		case err != nil:
			rep.Failed++
			status = "failed"
			errs = append(errs, err)
		case status == "unchanged":
			rep.Unchanged++
		case status == "added":
			rep.Added++
			rep.Chunks += chunks
		case status == "reembedded":
			rep.Reembedded++
			rep.Chunks += chunks
		default:
			rep.Updated++
			rep.Chunks += chunks
		}
		if progress != nil {
			progress(Progress{Path: f, Index: i + 1, Total: len(files), Status: status, Chunks: chunks, Err: err, Elapsed: time.Since(start)})
		}
	}
	return rep, errors.Join(errs...)
}

func dedupe(xs []string) []string {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func (s *Service) ingestFile(ctx context.Context, path string) (status string, chunks, embedded int, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", 0, 0, fmt.Errorf("knowledge: add %s: %w", path, err)
	}
	if fi.Size() > s.cfg.MaxFileBytes {
		return "", 0, 0, fmt.Errorf("knowledge: add %s: %w: %d bytes is over the %d-byte limit (knowledge.max_file_bytes)", path, ErrUnsupported, fi.Size(), s.cfg.MaxFileBytes)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", 0, 0, fmt.Errorf("knowledge: add %s: %w", path, err)
	}
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	status = "added"
	old, err := s.store.GetDocument(ctx, path)
	switch {
	case err == nil && old.ContentHash == hash && !s.stale(old):
		return "unchanged", old.Chunks, 0, nil
	case err == nil && old.ContentHash == hash:
		status = "reembedded"
	case err == nil:
		status = "updated"
	case !errors.Is(err, echogate.ErrNotFound):
		return "", 0, 0, fmt.Errorf("knowledge: add %s: %w", path, err)
	}
	mime := mimeByExt[strings.ToLower(filepath.Ext(path))]
	ex, err := extract(mime, raw)
	if err != nil {
		return "", 0, 0, fmt.Errorf("knowledge: add %s: %w", path, err)
	}
	bs, title := blocks(ex.text, ex.headings)
	if ex.title != "" {
		title = ex.title
	}
	if title == "" {
		title = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	cs := chunkText(ex.text, bs, s.cfg.ChunkSize, s.cfg.ChunkOverlap)
	if len(cs) == 0 {
		return "", 0, 0, fmt.Errorf("knowledge: add %s: %w: no text found", path, ErrUnsupported)
	}
	id := DocID(path)
	if s.emb != nil {
		texts := make([]string, len(cs))
		for i, c := range cs {
			// The heading gives a passage its context ("Install › Linux: run …").
			texts[i] = strings.TrimSpace(title + " › " + c.Heading + "\n" + c.Text)
		}
		vecs, u, err := s.emb.Embed(ctx, texts)
		s.report(ctx, u)
		if err != nil {
			return "", 0, 0, fmt.Errorf("knowledge: add %s: embed %d chunks: %w (nothing stored for this file; run the command again once the endpoint works)", path, len(cs), err)
		}
		for i := range cs {
			cs[i].Embedding = vecs[i]
		}
		embedded = len(cs)
	}
	for i := range cs {
		cs[i].DocID = id
	}
	now := s.cfg.Now()
	doc := memrec.Document{ID: id, Source: path, Title: title, MIME: mime, ContentHash: hash, Bytes: int64(len(raw)), AddedAt: now, UpdatedAt: now}
	if s.emb != nil {
		doc.EmbedModel = s.cfg.EmbedModel
	}
	if err := s.store.PutDocument(ctx, doc, cs); err != nil {
		return "", 0, embedded, fmt.Errorf("knowledge: add %s: %w", path, err)
	}
	return status, len(cs), embedded, nil
}

func (s *Service) report(ctx context.Context, u echogate.Usage) {
	if s.cfg.ReportUsage != nil && (u.InputTokens > 0 || u.Failed) {
		s.cfg.ReportUsage(ctx, echogate.UsageRecord{Trigger: echogate.TriggerMessage, Usage: u, At: s.cfg.Now()})
	}
}

// List lists the documents, most recently updated first.
func (s *Service) List(ctx context.Context, limit int) ([]memrec.Document, error) {
	ds, err := s.store.ListDocuments(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("knowledge: list: %w", err)
	}
	return ds, nil
}

// Remove deletes a document by id or path (a relative path is made absolute).
func (s *Service) Remove(ctx context.Context, idOrPath string) (memrec.Document, error) {
	doc, err := s.store.GetDocument(ctx, idOrPath)
	if errors.Is(err, echogate.ErrNotFound) {
		if abs, aerr := filepath.Abs(idOrPath); aerr == nil {
			doc, err = s.store.GetDocument(ctx, abs)
		}
	}
	if err != nil {
		return memrec.Document{}, fmt.Errorf("knowledge: rm %s: %w (see `echogate knowledge list` for ids)", idOrPath, err)
	}
	if err := s.store.DeleteDocument(ctx, doc.ID); err != nil {
		return memrec.Document{}, fmt.Errorf("knowledge: rm %s: %w", idOrPath, err)
	}
	return doc, nil
}
