package knowledge

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ledongthuc/pdf"
	"golang.org/x/net/html"
)

// Supported file types by extension.
var mimeByExt = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".txt":      "text/plain",
	".text":     "text/plain",
	".html":     "text/html",
	".htm":      "text/html",
	".pdf":      "application/pdf",
}

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

// extract turns a file's bytes into text. Markdown is kept as is; HTML becomes Markdown-like
// text with "#" headings (scripts, styles and navigation dropped); PDF text is extracted page by
// page; plain text is kept.
func extract(mime string, raw []byte) (extracted, error) {
	switch mime {
	case "text/markdown":
		return extracted{text: normalize(string(raw)), headings: true}, nil
	case "text/plain":
		return extracted{text: normalize(string(raw))}, nil
	case "text/html":
		return htmlText(raw)
	case "application/pdf":
		return pdfText(raw)
	}
	return extracted{}, fmt.Errorf("%w: unsupported type %s", ErrUnsupported, mime)
}

func normalize(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.TrimPrefix(s, "\uFEFF")
}

func pdfText(raw []byte) (ex extracted, err error) {
	defer func() {
		// The PDF parser panics on some malformed files; a bad file must not take the CLI down.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: malformed PDF: %v", ErrUnsupported, r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return extracted{}, fmt.Errorf("read PDF: %w", err)
	}
	var b strings.Builder
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return extracted{}, fmt.Errorf("read PDF page %d: %w", i, err)
		}
		if t = strings.TrimSpace(t); t != "" {
			b.WriteString(t)
			b.WriteString("\n\n")
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return extracted{}, fmt.Errorf("%w: the PDF has no extractable text (scanned images need OCR first)", ErrUnsupported)
	}
	return extracted{text: normalize(b.String())}, nil
}

func htmlText(raw []byte) (extracted, error) {
	doc, err := html.Parse(bytes.NewReader(raw))
	if err != nil {
		return extracted{}, fmt.Errorf("parse HTML: %w", err)
	}
	var (
		b     strings.Builder
		title string
	)
	block := func() {
		s := b.String()
		if len(s) > 0 && !strings.HasSuffix(s, "\n\n") {
			if strings.HasSuffix(s, "\n") {
				b.WriteString("\n")
			} else {
				b.WriteString("\n\n")
			}
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "noscript", "nav", "footer", "template", "svg", "head":
				if n.Data == "head" {
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						if c.Type == html.ElementNode && c.Data == "title" && c.FirstChild != nil {
							title = strings.TrimSpace(c.FirstChild.Data)
						}
					}
				}
				return
			case "h1", "h2", "h3", "h4", "h5", "h6":
				block()
				b.WriteString(strings.Repeat("#", int(n.Data[1]-'0')) + " ")
				b.WriteString(strings.Join(strings.Fields(nodeText(n)), " "))
				b.WriteString("\n\n")
				return
			case "p", "div", "section", "article", "ul", "ol", "table", "pre", "blockquote", "tr":
				block()
			case "br":
				b.WriteString("\n")
			case "li":
				block()
				b.WriteString("- ")
			}
		}
		if n.Type == html.TextNode {
			t := strings.Join(strings.Fields(n.Data), " ")
			if t != "" {
				if s := b.String(); len(s) > 0 && !strings.HasSuffix(s, "\n") && !strings.HasSuffix(s, " ") {
					b.WriteString(" ")
				}
				b.WriteString(t)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && (n.Data == "p" || n.Data == "li" || n.Data == "tr" || n.Data == "pre") {
			b.WriteString("\n")
		}
	}
	walk(doc)
	return extracted{text: normalize(b.String()), title: title, headings: true}, nil
}

func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteString(" ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}
