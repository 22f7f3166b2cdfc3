package extract

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkDoc is what every extraction must satisfy, whatever the bytes: an error is one of the
// package's (or ctx's), and a document's text is valid UTF-8.
func checkDoc(t *testing.T, what string, doc Document, err error) {
	t.Helper()
	if err != nil {
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		t.Fatalf("%s: error %v wraps none of the package's sentinels", what, err)
	}
	if !utf8.ValidString(doc.Text) {
		t.Fatalf("%s: text %q is not valid UTF-8", what, doc.Text)
	}
}

// FuzzExtractHTML: any bytes labelled HTML.
func FuzzExtractHTML(f *testing.F) {
	for _, s := range []string{
		"<html><head><title>T</title></head><body><h1>A</h1><p>b <b>c</b></p><script>x()</script></body></html>",
		"<table><tr><td>1<td>2</table>", "<p>unclosed <a href=x>link", "<<<>>>", "\xff\xfe<\x00p>", strings.Repeat("<div>", 5000),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Extract(context.Background(), data, "page.html", "text/html", Options{})
		checkDoc(t, "html", doc, err)
	})
}

// FuzzExtractCSV: any bytes labelled CSV, with any row limit.
func FuzzExtractCSV(f *testing.F) {
	for _, s := range []string{
		"a,b\n1,2\n", "\"quoted, cell\",x\n\"bad\"quote\n", "a;b;c\n1;2;3", "a\tb\n1\t2", ",,,\n\n\n", "\"", strings.Repeat("x,", 3000),
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, rows uint8) {
		doc, err := Extract(context.Background(), data, "t.csv", "text/csv", Options{MaxRows: int(rows)})
		checkDoc(t, "csv", doc, err)
	})
}

// FuzzExtractPDF runs the whole PDF path, pre-check and child process, on any bytes: whatever
// the reader does with them, the answer is a document or one of the package's errors, and this
// process lives.
func FuzzExtractPDF(f *testing.F) {
	if bomb, err := os.ReadFile("testdata/xref-bomb.pdf"); err == nil {
		f.Add(bomb)
	}
	f.Add(rawPDF("BT /F1 12 Tf 72 720 Td [(Function)-333(and)] TJ ET"))
	f.Add(rawPDF("BT /F1 12 Tf 1 0 0 1 72 720 Tm (a) Tj T* (b) ' ET"))
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"))
	f.Add([]byte("%PDF-1.5\nxref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 1 >>\nstartxref\n9\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 5 || string(data[:5]) != "%PDF-" {
			data = append([]byte("%PDF-1.4\n"), data...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		doc, err := Extract(ctx, data, "f.pdf", "application/pdf", Options{MaxPages: 3})
		checkDoc(t, "pdf", doc, err)
	})
}
