package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ledongthuc/pdf"
)

// pdfText extracts the text of pages opt.FirstPage … opt.FirstPage+opt.MaxPages-1, after the
// bounded validation of checkPDF, in a child process (pdfIsolated).
func pdfText(ctx context.Context, data []byte, label string, opt Options) (Document, error) {
	if err := checkPDF(data, label); err != nil {
		return Document{}, err
	}
	return pdfIsolated(ctx, data, label, opt)
}

// pdfInProcess is pdfText in this process: only a child runs it on untrusted bytes.
func pdfInProcess(ctx context.Context, data []byte, label string, opt Options) (doc Document, err error) {
	if err := checkPDF(data, label); err != nil {
		return Document{}, err
	}
	return pdfUnchecked(ctx, data, label, opt)
}

func pdfUnchecked(ctx context.Context, data []byte, label string, opt Options) (doc Document, err error) {
	defer func() {
		// The PDF parser panics on some malformed files; a bad file must not take the gateway
		// down.
		if r := recover(); r != nil {
			doc, err = Document{}, fmt.Errorf("%w: %s is a damaged PDF (%v); export it again or send it as text", ErrMalformed, label, r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) {
			return Document{}, fmt.Errorf("%w: %s is an encrypted PDF; send a copy without a password", ErrUnsupported, label)
		}
		return Document{}, fmt.Errorf("%w: %s cannot be read as a PDF: %v", ErrMalformed, label, err)
	}
	total := r.NumPage()
	if total == 0 {
		return Document{}, fmt.Errorf("%w: %s has no pages", ErrNoText, label)
	}
	if opt.FirstPage > total {
		return Document{}, fmt.Errorf("%w: %s has %d pages; page %d does not exist", ErrPageRange, label, total, opt.FirstPage)
	}
	last := min(total, opt.FirstPage+opt.MaxPages-1)
	doc = Document{MIME: TypePDF, FirstPage: opt.FirstPage, TotalPages: total, Truncated: last < total || opt.FirstPage > 1}
	var b strings.Builder
	for i := opt.FirstPage; i <= last; i++ {
		if err := ctx.Err(); err != nil {
			return Document{}, err
		}
		text := ""
		if p := r.Page(i); !p.V.IsNull() {
			t, err := pageText(p)
			if err != nil {
				return Document{}, fmt.Errorf("%w: %s: page %d cannot be read: %v", ErrMalformed, label, i, err)
			}
			text = strings.TrimSpace(Normalize(t))
		}
		doc.Pages = append(doc.Pages, text)
		if text != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(text)
		}
	}
	if b.Len() == 0 {
		if doc.Truncated {
			return Document{}, fmt.Errorf("%w: pages %d-%d of %s hold no extractable text (scanned images need OCR first)", ErrNoText, opt.FirstPage, last, label)
		}
		return Document{}, fmt.Errorf("%w: %s has no extractable text: it is probably scanned images; run it through OCR or send the text", ErrNoText, label)
	}
	doc.Text = b.String()
	return doc, nil
}
