package knowledge

import (
	"context"
	"errors"
	"fmt"

	"github.com/echogate/echogate/internal/memrec"
)

// stale reports whether doc's vectors came from another embedder than the configured one.
func (s *Service) stale(doc memrec.Document) bool {
	return s.emb != nil && s.cfg.EmbedModel != "" && doc.EmbedModel != s.cfg.EmbedModel
}

// Stale lists the documents whose vectors were made by another embedder (or before embedders
// were recorded): their vectors are not searched until they are re-embedded.
func (s *Service) Stale(ctx context.Context) ([]memrec.Document, error) {
	ds, err := s.store.ListDocuments(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("knowledge: list: %w", err)
	}
	var out []memrec.Document
	for _, d := range ds {
		if s.stale(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// Reembed re-embeds every stale document from its source file, one file at a time with
// progress, like Ingest (which it is). A source that is gone fails and is reported; remove it
// with Remove.
func (s *Service) Reembed(ctx context.Context, progress func(Progress)) (Report, error) {
	ds, err := s.Stale(ctx)
	if err != nil || len(ds) == 0 {
		return Report{}, err
	}
	paths := make([]string, len(ds))
	for i, d := range ds {
		paths[i] = d.Source
	}
	var (
		rep  Report
		errs []error
	)
	// One Ingest per source, so that a vanished file does not stop the others.
	for i, p := range paths {
		r, err := s.Ingest(ctx, []string{p}, func(pr Progress) {
			if progress != nil {
				pr.Index, pr.Total = i+1, len(paths)
				progress(pr)
			}
		})
		if err != nil && r.Failed == 0 {
			r.Failed = 1
			if progress != nil {
				progress(Progress{Path: p, Index: i + 1, Total: len(paths), Status: "failed", Err: err})
			}
		}
		rep.Added += r.Added
		rep.Updated += r.Updated
		rep.Reembedded += r.Reembedded
		rep.Unchanged += r.Unchanged
		rep.Failed += r.Failed
		rep.Chunks += r.Chunks
		rep.Embedded += r.Embedded
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return rep, errors.Join(errs...)
}
