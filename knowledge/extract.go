package knowledge

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	textextract "github.com/echogate/echogate/internal/extract"
)

// Supported file types by extension: what the knowledge base ingests.
var mimeByExt = map[string]string{
	".md":       textextract.TypeMarkdown,
	".markdown": textextract.TypeMarkdown,
	".txt":      textextract.TypeText,
	".text":     textextract.TypeText,
	".html":     textextract.TypeHTML,
	".htm":      textextract.TypeHTML,
	".pdf":      textextract.TypePDF,
}

// maxPDFPages is the page limit of ingested PDFs: the whole document, within
// knowledge.max_file_bytes.
const maxPDFPages = 100_000

// Supported reports whether path has a file type the knowledge base ingests.
func Supported(path string) bool {
	_, ok := mimeByExt[strings.ToLower(filepath.Ext(path))]
	return ok
}

// extracted is a document's text and whether its "#" lines are headings.
type extracted struct {
	text     string
	title    string
	headings bool
}

// extract turns a file's bytes into text with the gateway's one extractor (internal/extract):
// Markdown is kept as is; HTML becomes Markdown-like text with "#" headings (scripts, styles and
// navigation dropped); PDF text is extracted page by page; plain text is kept. Failures wrap
// ErrUnsupported.
func extract(mime string, raw []byte) (extracted, error) {
	if _, ok := map[string]bool{textextract.TypeMarkdown: true, textextract.TypeText: true, textextract.TypeHTML: true, textextract.TypePDF: true}[mime]; !ok {
		return extracted{}, fmt.Errorf("%w: unsupported type %s", ErrUnsupported, mime)
	}
	doc, err := textextract.Extract(context.Background(), raw, "", mime, textextract.Options{MaxPages: maxPDFPages})
	if err != nil {
		return extracted{}, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return extracted{text: doc.Text, title: doc.Title, headings: doc.Headings}, nil
}
