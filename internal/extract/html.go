package extract

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// skipElements are dropped with everything inside them: code, styling, navigation and embedded
// objects carry no readable page text.
var skipElements = map[string]bool{
	"script": true, "style": true, "nav": true, "noscript": true, "template": true, "svg": true,
	"math": true, "iframe": true, "object": true, "embed": true, "canvas": true,
	"select": true, "button": true, "dialog": true,
}

// voidElements never have an end tag.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// blockElements start and end a line.
var blockElements = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "body": true, "dd": true,
	"details": true, "div": true, "dl": true, "dt": true, "fieldset": true, "figcaption": true,
	"figure": true, "footer": true, "form": true, "header": true, "hgroup": true, "main": true,
	"ol": true, "section": true, "summary": true, "table": true, "tbody": true, "thead": true,
	"tfoot": true, "tr": true, "ul": true, "caption": true, "center": true, "legend": true,
}

// paragraphElements are separated from their neighbours by a blank line.
var paragraphElements = map[string]bool{"p": true, "blockquote": true, "pre": true, "table": true, "figure": true, "hr": true}

// HTMLToText reduces an HTML document to readable text: the <title>, then headings (as
// "#"-prefixed lines), paragraphs, list items ("- " or "1. "), table rows (cells joined by " | ")
// and link text, with whitespace collapsed. Scripts, styles, navigation and hidden elements
// are dropped. It reads r to the end; malformed HTML is tolerated as browsers do.
func HTMLToText(r io.Reader) (title, text string) {
	z := html.NewTokenizer(r)
	c := &htmlConv{w: &textWriter{}}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return strings.ToValidUTF8(collapseSpaces(c.title.String()), "\uFFFD"), strings.ToValidUTF8(c.w.String(), "\uFFFD")
		case html.TextToken:
			c.textToken(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			nameB, hasAttr := z.TagName()
			name := string(nameB)
			switch {
			case c.skipping(tt, name):
			case tt == html.EndTagToken:
				c.endTag(name)
			case tt == html.StartTagToken && !voidElements[name] && (skipElements[name] || (hasAttr && hiddenByAttrs(z))):
				c.skipTag, c.skipDepth = name, 1
			default:
				c.startTag(tt, name)
			}
		}
	}
}

// htmlConv is HTMLToText's state between tokens.
type htmlConv struct {
	w         *textWriter
	skipTag   string // name of the element being skipped, "" if none
	skipDepth int
	inTitle   bool
	title     strings.Builder
	haveTitle bool
	pre       int
	lists     []int // per open list: -1 for ul, else the next number of an ol
	cellIndex int
}

func (c *htmlConv) textToken(text []byte) {
	switch {
	case c.skipTag != "":
	case c.inTitle:
		if !c.haveTitle {
			c.title.Write(text)
		}
	case c.pre > 0:
		c.w.raw(string(text))
	default:
		c.w.text(string(text))
	}
}

// skipping reports whether a tag falls inside a skipped element, tracking that element's
// nesting so the skip ends at its own end tag.
func (c *htmlConv) skipping(tt html.TokenType, name string) bool {
	if c.skipTag == "" {
		return false
	}
	if name == c.skipTag && !voidElements[name] {
		switch tt {
		case html.StartTagToken:
			c.skipDepth++
		case html.EndTagToken:
			c.skipDepth--
			if c.skipDepth == 0 {
				c.skipTag = ""
			}
		}
	}
	return true
}

// hiddenByAttrs reads the tag's attributes and reports whether they hide the element.
func hiddenByAttrs(z *html.Tokenizer) bool {
	hidden := false
	for {
		key, val, more := z.TagAttr()
		k := string(key)
		if k == "hidden" || (k == "aria-hidden" && string(val) == "true") ||
			(k == "style" && hidesElement(string(val))) {
			hidden = true
		}
		if !more {
			return hidden
		}
	}
}

func (c *htmlConv) endTag(name string) {
	w := c.w
	switch {
	case name == "title":
		if c.inTitle {
			c.inTitle, c.haveTitle = false, true
		}
	case isHeading(name), paragraphElements[name]:
		w.boundary(2)
		if name == "pre" && c.pre > 0 {
			c.pre--
		}
	case name == "ul" || name == "ol":
		if len(c.lists) > 0 {
			c.lists = c.lists[:len(c.lists)-1]
		}
		w.boundary(1)
		if len(c.lists) == 0 {
			w.boundary(2)
		}
	case name == "li" || blockElements[name]:
		w.boundary(1)
	}
}

// startTag handles a start or self-closing tag that is shown.
func (c *htmlConv) startTag(tt html.TokenType, name string) {
	w := c.w
	switch {
	case name == "title":
		if tt == html.StartTagToken && !c.haveTitle {
			c.inTitle = true
		}
	case isHeading(name):
		w.boundary(2)
		w.prefix(strings.Repeat("#", int(name[1]-'0')) + " ")
	case paragraphElements[name]:
		w.boundary(2)
		if name == "pre" && tt == html.StartTagToken {
			c.pre++
		}
	case name == "br":
		w.lineBreak()
	case name == "ul" || name == "ol":
		w.boundary(1)
		if len(c.lists) == 0 {
			w.boundary(2)
		}
		if tt == html.StartTagToken {
			next := -1
			if name == "ol" {
				next = 1
			}
			c.lists = append(c.lists, next)
		}
	case name == "li":
		w.boundary(1)
		marker := "- "
		if n := len(c.lists); n > 0 && c.lists[n-1] >= 0 {
			marker = strconv.Itoa(c.lists[n-1]) + ". "
			c.lists[n-1]++
		}
		w.prefix(strings.Repeat("  ", max(len(c.lists)-1, 0)) + marker)
	case name == "tr":
		w.boundary(1)
		c.cellIndex = 0
	case name == "td" || name == "th":
		if c.cellIndex > 0 {
			w.prefix(" | ")
		}
		c.cellIndex++
	case blockElements[name]:
		w.boundary(1)
	}
}

func isHeading(name string) bool {
	return len(name) == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6'
}

// hidesElement reports whether an inline style hides its element.
func hidesElement(style string) bool {
	s := strings.ToLower(strings.Join(strings.Fields(style), ""))
	return strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden")
}

// textWriter accumulates text, collapsing whitespace and placing line breaks only between
// pieces of text (never leading, trailing or more than one blank line).
type textWriter struct {
	b          strings.Builder
	newlines   int    // line breaks owed before the next text
	space      bool   // a space is owed before the next text
	pendingPfx string // emitted right before the next text (list marker, heading hashes)
	atLineHead bool
}

func (w *textWriter) boundary(n int) {
	if w.b.Len() == 0 {
		return
	}
	w.newlines = max(w.newlines, n)
	w.space = false
}

func (w *textWriter) lineBreak() {
	if w.b.Len() == 0 {
		return
	}
	w.newlines++
	w.space = false
}

func (w *textWriter) prefix(p string) { w.pendingPfx += p }

func (w *textWriter) flushPending() {
	if w.b.Len() > 0 {
		if w.newlines > 0 {
			w.b.WriteString(strings.Repeat("\n", min(w.newlines, 2)))
			w.atLineHead = true
		} else if w.space && !w.atLineHead && w.pendingPfx == "" {
			w.b.WriteByte(' ')
		}
	}
	w.newlines, w.space = 0, false
	if w.pendingPfx != "" {
		w.b.WriteString(w.pendingPfx)
		w.pendingPfx = ""
	}
}

// text writes s with runs of whitespace collapsed to one space.
func (w *textWriter) text(s string) {
	if s == "" {
		return
	}
	if startsSpace(s) {
		w.space = true
	}
	for i, f := range strings.Fields(s) {
		if i > 0 {
			w.space = true
		}
		w.flushPending()
		w.b.WriteString(f)
		w.atLineHead = false
	}
	if endsSpace(s) {
		w.space = true
	}
}

// raw writes preformatted text as is (line endings normalised).
func (w *textWriter) raw(s string) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	if w.b.Len() == 0 {
		s = strings.TrimLeft(s, "\n")
	}
	if s == "" {
		return
	}
	w.flushPending()
	w.b.WriteString(s)
	w.atLineHead = strings.HasSuffix(s, "\n")
}

func (w *textWriter) String() string {
	lines := strings.Split(w.b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	out := strings.Join(lines, "\n")
	for strings.Contains(out, "\n\n\n") {
		out = strings.ReplaceAll(out, "\n\n\n", "\n\n")
	}
	return strings.TrimSpace(out)
}

func startsSpace(s string) bool {
	return s != "" && unicode.IsSpace(rune(s[0]))
}

func endsSpace(s string) bool {
	return s != "" && unicode.IsSpace(rune(s[len(s)-1]))
}

func collapseSpaces(s string) string { return strings.Join(strings.Fields(s), " ") }

// IsHTML reports whether a body of media type mt should go through HTMLToText: an HTML media
// type, or no media type and a body that starts like an HTML document.
func IsHTML(mt string, body []byte) bool {
	if mt == "text/html" || mt == "application/xhtml+xml" {
		return true
	}
	head := bytes.ToLower(bytes.TrimSpace(body[:min(len(body), 512)]))
	return mt == "" && (bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html")))
}
