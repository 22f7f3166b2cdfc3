// Package extract turns documents into plain text for the model: plain text, Markdown, HTML, CSV
// and PDF. It is the one text extractor of the gateway: knowledge ingestion, the read_file tool
// (chat attachments) and http_fetch (HTML pages) all use it.
//
// The type of a document is decided by Detect from the declared media type, the file name's
// extension and the content itself (http.DetectContentType), so a PDF labelled
// application/octet-stream or a Markdown file labelled text/plain is still read as what it is.
// Extraction is CPU-bound, does no I/O and is safe for concurrent use; limits (PDF pages, CSV
// rows) keep its cost proportional to what the caller asked for.
package extract

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"path/filepath"
	"strings"
)

// Media types Extract distinguishes.
const (
	TypeText     = "text/plain"
	TypeMarkdown = "text/markdown"
	TypeHTML     = "text/html"
	TypeCSV      = "text/csv"
	TypeTSV      = "text/tab-separated-values"
	TypePDF      = "application/pdf"
)

// Defaults of Options.
const (
	DefaultMaxPages = 50
	DefaultMaxRows  = 500
	// maxCellChars caps one CSV cell in the rendered table.
	maxCellChars = 200
)

// Options bound an extraction. The zero value means the defaults.
type Options struct {
	// FirstPage is the first PDF page to extract (1-based); default 1.
	FirstPage int
	// MaxPages is how many PDF pages are extracted from FirstPage on; default DefaultMaxPages.
	// Pages past it are not read; Document.Truncated says so.
	MaxPages int
	// MaxRows is how many CSV data rows are rendered (after the header); default DefaultMaxRows.
	MaxRows int
}

func (o Options) withDefaults() Options {
	if o.FirstPage <= 0 {
		o.FirstPage = 1
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	return o
}

// Document is the text of one file.
type Document struct {
	// MIME is the media type the content was read as (one of the Type* constants, or another
	// text type such as application/json read as plain text).
	MIME string
	// Title is the HTML <title>, when there is one.
	Title string
	// Text is the readable text: pages of a PDF are separated by a blank line; a CSV is a
	// Markdown table.
	Text string
	// Headings reports that "#"-prefixed lines of Text are headings (Markdown, HTML).
	Headings bool
	// Pages holds the text of each extracted PDF page, Pages[0] being page FirstPage. Nil for
	// other types.
	Pages []string
	// FirstPage is the number of Pages[0] (PDF only).
	FirstPage int
	// TotalPages is the PDF's page count (PDF only).
	TotalPages int
	// TotalRows is the number of CSV data rows (CSV only).
	TotalRows int
	// Truncated reports that part of the document was left out: PDF pages past the page
	// limit, CSV rows past the row limit.
	Truncated bool
}

// LastPage is the number of the last extracted PDF page (0 when there are none).
func (d Document) LastPage() int {
	if len(d.Pages) == 0 {
		return 0
	}
	return d.FirstPage + len(d.Pages) - 1
}

// Size is an estimate of the memory the document holds, for caches.
func (d Document) Size() int64 {
	n := len(d.Text) + len(d.Title) + len(d.MIME) + 128
	for _, p := range d.Pages {
		n += len(p) + 16
	}
	return int64(n)
}

// byExt maps file name extensions to media types.
var byExt = map[string]string{
	".md": TypeMarkdown, ".markdown": TypeMarkdown, ".mdown": TypeMarkdown, ".mkd": TypeMarkdown,
	".txt": TypeText, ".text": TypeText, ".log": TypeText, ".rst": TypeText,
	".html": TypeHTML, ".htm": TypeHTML, ".xhtml": TypeHTML,
	".csv": TypeCSV, ".tsv": TypeTSV, ".tab": TypeTSV,
	".pdf":  TypePDF,
	".json": "application/json", ".ndjson": "application/x-ndjson", ".jsonl": "application/x-ndjson",
	".xml": "application/xml", ".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
}

// TypeByExt returns the media type of a file name's extension, or "" when it is not known.
func TypeByExt(name string) string {
	return byExt[strings.ToLower(filepath.Ext(name))]
}

// MediaType returns the bare, lower-case media type of a Content-Type value ("" when empty or
// unparsable).
func MediaType(contentType string) string {
	contentType = strings.TrimSpace(contentType)
	if contentType == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return strings.ToLower(mt)
	}
	return strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
}

// generic reports media types that say nothing about the content.
func generic(mt string) bool {
	switch mt {
	case "", "application/octet-stream", "binary/octet-stream", "application/binary", "application/unknown", "application/download":
		return true
	}
	return false
}

// Detect decides the media type of a file from the declared media type (a Content-Type value
// or the platform's mimetype), the file name's extension and the content. The content wins
// where it is unambiguous (a PDF or image signature); a generic or missing declaration falls
// back to the extension, then to sniffing.
func Detect(name, declared string, data []byte) string {
	mt := MediaType(declared)
	if mt == "text/x-markdown" {
		mt = TypeMarkdown
	}
	sniffed := MediaType(http.DetectContentType(data))
	switch {
	case sniffed == TypePDF, strings.HasPrefix(sniffed, "image/"):
		return sniffed
	}
	if generic(mt) || (mt == TypeText && TypeByExt(name) != "") {
		// Platforms label Markdown, CSV and JSON files text/plain; the extension is sharper.
		if ext := TypeByExt(name); ext != "" && !strings.HasPrefix(ext, "image/") && ext != TypePDF {
			return ext
		}
	}
	if generic(mt) {
		return sniffed
	}
	return mt
}

// textual reports the media types read as plain text.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ecmascript", "application/x-ndjson", "application/ndjson", "application/yaml",
		"application/x-yaml", "application/toml", "application/csv", "application/x-sh", "application/sql":
		return true
	}
	return false
}

// Supported reports whether Extract reads content of media type mt (as Detect returns it).
func Supported(mt string) bool {
	return mt == TypePDF || textual(mt)
}

// Extract returns the text of data. name (for the extension) and declared (the media type the
// sender stated) may be empty. ctx is checked between PDF pages: a cancelled extraction returns
// ctx's error. Errors wrap ErrUnsupported, ErrImage, ErrNoText, ErrMalformed or ErrPageRange
// and say what to do.
func Extract(ctx context.Context, data []byte, name, declared string, opt Options) (Document, error) {
	opt = opt.withDefaults()
	mt := Detect(name, declared, data)
	label := name
	if label == "" {
		label = "the file"
	}
	switch {
	case mt == TypePDF:
		return pdfText(ctx, data, label, opt)
	case strings.HasPrefix(mt, "image/"):
		return Document{}, fmt.Errorf("%w: %s is an image (%s); it has no text to read", ErrImage, label, mt)
	case !textual(mt):
		return Document{}, fmt.Errorf("%w: %s is %s; text, Markdown, HTML, CSV and PDF files can be read", ErrUnsupported, label, mt)
	}
	if looksBinary(data) {
		return Document{}, fmt.Errorf("%w: %s is labelled %s but holds binary data; text, Markdown, HTML, CSV and PDF files can be read", ErrUnsupported, label, mt)
	}
	data = DecodeCharset(data, declared)
	switch mt {
	case TypeHTML, "application/xhtml+xml":
		title, text := HTMLToText(bytes.NewReader(data))
		return Document{MIME: TypeHTML, Title: title, Text: text, Headings: true}, nil
	case TypeCSV, "application/csv", TypeTSV:
		return csvText(data, mt, opt)
	case TypeMarkdown:
		return Document{MIME: TypeMarkdown, Text: Normalize(string(data)), Headings: true}, nil
	}
	if mt == TypeText && IsHTML("", data) {
		title, text := HTMLToText(bytes.NewReader(data))
		return Document{MIME: TypeHTML, Title: title, Text: text, Headings: true}, nil
	}
	return Document{MIME: mt, Text: Normalize(string(data))}, nil
}

// Normalize makes text safe and uniform: CRLF becomes LF, invalid UTF-8 becomes U+FFFD, a
// leading byte-order mark is dropped.
func Normalize(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.TrimPrefix(s, "\uFEFF")
}

// looksBinary reports content with NUL bytes or many control characters in its first 8 KiB,
// which no text format has (UTF-16 with a byte-order mark excepted). Text in a legacy 8-bit
// encoding is not binary: DecodeCharset converts it.
func looksBinary(data []byte) bool {
	head := data[:min(len(data), 8<<10)]
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		return false
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	ctrl := 0
	for _, c := range head {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b {
			ctrl++
		}
	}
	return ctrl > len(head)/20
}
