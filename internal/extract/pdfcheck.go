package extract

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
)

// maxObjects is the most objects a PDF of n bytes can hold by this package's reckoning: an
// object takes more than 8 bytes even inside a compressed object stream, and 64 Ki more leaves
// room for tables that count freed numbers. The PDF reader allocates its cross-reference table
// by the highest object number it is told of, so a file claiming more is refused unread.
func maxObjects(n int) int64 { return int64(n)/8 + 1<<16 }

var (
	reSize  = regexp.MustCompile(`/Size\s*([0-9]+)`)
	reIndex = regexp.MustCompile(`/Index\s*\[([0-9\s]*)\]`)
)

// checkPDF is the bounded validation before the PDF reader sees data: every object number the
// cross-reference tables and streams declare (subsection headers of "xref" tables, /Size, the
// /Index pairs of xref streams) must fit what a file of this size can hold. It reads data once
// and allocates nothing in proportion to the numbers it reads.
func checkPDF(data []byte, label string) error {
	limit := maxObjects(len(data))
	bad := func(what string, n int64) error {
		return fmt.Errorf("%w: %s is a damaged PDF: its %s names object %d, more than a file of %d bytes can hold; export it again or send it as text",
			ErrMalformed, label, what, n, len(data))
	}
	for _, m := range reSize.FindAllSubmatch(data, -1) {
		if n, ok := parseCount(m[1]); !ok || n > limit {
			return bad("/Size", n)
		}
	}
	for _, m := range reIndex.FindAllSubmatch(data, -1) {
		f := bytes.Fields(m[1])
		for i := 0; i+1 < len(f); i += 2 {
			start, ok1 := parseCount(f[i])
			count, ok2 := parseCount(f[i+1])
			if !ok1 || !ok2 || start+count > limit {
				return bad("cross-reference stream /Index", start+count)
			}
		}
	}
	for rest := data; ; {
		i := bytes.Index(rest, []byte("xref"))
		if i < 0 {
			return nil
		}
		start := i > 0 && rest[i-1] != '\n' && rest[i-1] != '\r' && rest[i-1] != ' '
		rest = rest[i+4:]
		if start { // "startxref", or the word inside other text
			continue
		}
		if n, ok := xrefSections(rest, limit); !ok {
			return bad("cross-reference table", n)
		}
	}
}

// xrefSections walks the subsections of one xref table ("start count" headers, each followed by
// count entries of three fields) up to "trailer", and reports the first header past limit.
func xrefSections(table []byte, limit int64) (int64, bool) {
	if end := bytes.Index(table, []byte("trailer")); end >= 0 {
		table = table[:end]
	}
	fields := bytes.Fields(table)
	for i := 0; i+1 < len(fields); {
		start, ok1 := parseCount(fields[i])
		count, ok2 := parseCount(fields[i+1])
		if !ok1 || !ok2 {
			return 0, true // not a table this check understands; the reader judges it
		}
		if start > limit {
			return start, false
		}
		if start+count > limit {
			return start + count, false
		}
		i += 2 + 3*int(count)
	}
	return 0, true
}

// parseCount reads a non-negative decimal of at most 12 digits; more is never a valid count here.
func parseCount(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 1 << 40, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil && n >= 0
}
