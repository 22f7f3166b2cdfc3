package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
)

// makePDF returns a PDF with one page per text (an empty text makes a blank page).
func makePDF(t testing.TB, pages ...string) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetFont("Helvetica", "", 12)
	for _, text := range pages {
		p.AddPage()
		if text != "" {
			p.Cell(40, 10, text)
		}
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDetect(t *testing.T) {
	pdfData := makePDF(t, "x")
	for name, tt := range map[string]struct {
		file, declared string
		data           []byte
		want           string
	}{
		"declared pdf":              {"a.pdf", "application/pdf", pdfData, TypePDF},
		"pdf labelled octet-stream": {"a.bin", "application/octet-stream", pdfData, TypePDF},
		"pdf labelled text":         {"a.txt", "text/plain", pdfData, TypePDF},
		"markdown labelled text":    {"notes.md", "text/plain", []byte("# Hi"), TypeMarkdown},
		"markdown declared":         {"x", "text/markdown; charset=utf-8", []byte("# Hi"), TypeMarkdown},
		"x-markdown":                {"x", "text/x-markdown", []byte("# Hi"), TypeMarkdown},
		"csv by extension":          {"data.csv", "", []byte("a,b\n1,2\n"), TypeCSV},
		"csv labelled text":         {"data.csv", "text/plain", []byte("a,b\n1,2\n"), TypeCSV},
		"html sniffed":              {"page", "", []byte("<!DOCTYPE html><html><body>x</body></html>"), TypeHTML},
		"plain sniffed":             {"", "", []byte("just words"), TypeText},
		"png by signature":          {"cat.txt", "text/plain", []byte("\x89PNG\r\n\x1a\n0000"), "image/png"},
		"json declared":             {"x", "application/json", []byte(`{"a":1}`), "application/json"},
		"zip by signature":          {"x", "", []byte("PK\x03\x04 rest"), "application/zip"},
	} {
		if got := Detect(tt.file, tt.declared, tt.data); got != tt.want {
			t.Errorf("%s: Detect(%q, %q) = %q, want %q", name, tt.file, tt.declared, got, tt.want)
		}
	}
}

func TestExtractTextTypes(t *testing.T) {
	ctx := context.Background()
	for name, tt := range map[string]struct {
		file, declared string
		data           string
		wantMIME       string
		want           []string
		notWant        []string
		headings       bool
	}{
		"plain":    {"a.txt", "text/plain", "line one\r\nline two", TypeText, []string{"line one\nline two"}, nil, false},
		"bom":      {"a.txt", "", "\uFEFFhello", TypeText, []string{"hello"}, []string{"\uFEFF"}, false},
		"markdown": {"a.md", "", "# Title\n\nBody *text*.", TypeMarkdown, []string{"# Title", "Body *text*."}, nil, true},
		"html": {"a.html", "text/html", `<html><head><title>T</title><style>p{}</style></head><body><nav>Home</nav><h2>Setup</h2><p>Run <b>make</b> now.</p><script>alert(1)</script></body></html>`,
			TypeHTML, []string{"## Setup", "Run make now."}, []string{"alert", "Home", "p{}"}, true},
		"html in text/plain":  {"", "text/plain", "<html><body><p>para</p></body></html>", TypeHTML, []string{"para"}, []string{"<p>"}, true},
		"json":                {"a.json", "application/json", `{"key": "value"}`, "application/json", []string{`"key": "value"`}, nil, false},
		"latin-1 declared":    {"a.txt", "text/plain; charset=iso-8859-1", "caf\xe9", TypeText, []string{"café"}, nil, false},
		"windows-1252 guess":  {"a.txt", "text/plain", "na\xefve", TypeText, []string{"naïve"}, nil, false},
		"csv as table":        {"a.csv", "text/csv", "name,qty\nwidget,3\n\"a|b\",4\n", TypeCSV, []string{"| name | qty |", "| --- | --- |", "| widget | 3 |", `| a\|b | 4 |`}, nil, false},
		"semicolon csv":       {"a.csv", "", "name;qty\nwidget;3\n", TypeCSV, []string{"| name | qty |", "| widget | 3 |"}, nil, false},
		"tsv":                 {"a.tsv", "", "name\tqty\nwidget\t3\n", TypeCSV, []string{"| widget | 3 |"}, nil, false},
		"ragged csv":          {"a.csv", "", "a,b\n1\n1,2,3\n", TypeCSV, []string{"| a | b |  |", "| 1 |  |  |", "| 1 | 2 | 3 |"}, nil, false},
		"empty text":          {"a.txt", "text/plain", "", TypeText, nil, nil, false},
		"text declared octet": {"notes.md", "application/octet-stream", "# Hi", TypeMarkdown, []string{"# Hi"}, nil, true},
	} {
		doc, err := Extract(ctx, []byte(tt.data), tt.file, tt.declared, Options{})
		if err != nil {
			t.Errorf("%s: Extract = %v, want no error", name, err)
			continue
		}
		if doc.MIME != tt.wantMIME || doc.Headings != tt.headings {
			t.Errorf("%s: Extract MIME, Headings = %q, %v, want %q, %v", name, doc.MIME, doc.Headings, tt.wantMIME, tt.headings)
		}
		for _, w := range tt.want {
			if !strings.Contains(doc.Text, w) {
				t.Errorf("%s: Extract text = %q, want it to contain %q", name, doc.Text, w)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(doc.Text, w) {
				t.Errorf("%s: Extract text = %q, must not contain %q", name, doc.Text, w)
			}
		}
	}
}

func TestExtractHTMLTitle(t *testing.T) {
	doc, err := Extract(context.Background(), []byte(`<html><head><title> The  Title </title></head><body>x</body></html>`), "p.html", "", Options{})
	if err != nil || doc.Title != "The Title" {
		t.Errorf("Extract(html).Title = %q, %v, want %q", doc.Title, err, "The Title")
	}
}

func TestExtractCSVRowCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,name\n")
	for i := range 30 {
		fmt.Fprintf(&b, "%d,item %d\n", i, i)
	}
	doc, err := Extract(context.Background(), []byte(b.String()), "big.csv", "", Options{MaxRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Truncated || doc.TotalRows != 30 {
		t.Errorf("Extract(30 rows, cap 10) Truncated, TotalRows = %v, %d, want true, 30", doc.Truncated, doc.TotalRows)
	}
	if !strings.Contains(doc.Text, "| 9 | item 9 |") || strings.Contains(doc.Text, "| 10 | item 10 |") {
		t.Errorf("Extract(30 rows, cap 10) = %q, want rows 0-9 only", doc.Text)
	}
	if !strings.Contains(doc.Text, "20 more rows not shown") {
		t.Errorf("Extract(30 rows, cap 10) = %q, want a note on the 20 rows left out", doc.Text)
	}
	long := "h\n" + strings.Repeat("x", 1000) + "\n"
	doc, _ = Extract(context.Background(), []byte(long), "l.csv", "", Options{})
	if n := len([]rune(strings.Split(doc.Text, "\n")[2])); n > maxCellChars+10 {
		t.Errorf("Extract(long cell) row is %d runes, want the cell capped at %d", n, maxCellChars)
	}
}

func TestExtractPDF(t *testing.T) {
	ctx := context.Background()
	data := makePDF(t, "Quarterly numbers are in the blue folder.", "", "Page three talks about llamas.")
	doc, err := Extract(ctx, data, "report.pdf", "application/pdf", Options{})
	if err != nil {
		t.Fatalf("Extract(pdf) = %v", err)
	}
	if doc.TotalPages != 3 || len(doc.Pages) != 3 || doc.FirstPage != 1 || doc.Truncated {
		t.Errorf("Extract(pdf) pages = total %d, got %d from %d, truncated %v; want 3, 3 from 1, false", doc.TotalPages, len(doc.Pages), doc.FirstPage, doc.Truncated)
	}
	if !strings.Contains(doc.Text, "blue folder") || !strings.Contains(doc.Text, "llamas") || doc.Pages[1] != "" {
		t.Errorf("Extract(pdf) = %q / %q, want both pages' text and a blank page 2", doc.Text, doc.Pages)
	}

	// Page window.
	doc, err = Extract(ctx, data, "report.pdf", "", Options{FirstPage: 2, MaxPages: 5})
	if err != nil || doc.FirstPage != 2 || doc.LastPage() != 3 || strings.Contains(doc.Text, "blue folder") || !strings.Contains(doc.Text, "llamas") {
		t.Errorf("Extract(pdf, from 2) = %+v, %v; want pages 2-3 only", doc, err)
	}
	doc, err = Extract(ctx, data, "report.pdf", "", Options{MaxPages: 1})
	if err != nil || !doc.Truncated || doc.LastPage() != 1 || strings.Contains(doc.Text, "llamas") {
		t.Errorf("Extract(pdf, 1 page) = %+v, %v; want page 1 only, truncated", doc, err)
	}
	if _, err := Extract(ctx, data, "report.pdf", "", Options{FirstPage: 9}); !errors.Is(err, ErrPageRange) || !strings.Contains(err.Error(), "3 pages") {
		t.Errorf("Extract(pdf, from 9) = %v, want ErrPageRange naming 3 pages", err)
	}
}

func TestExtractErrors(t *testing.T) {
	ctx := context.Background()
	blank := makePDF(t, "", "")
	for name, tt := range map[string]struct {
		file, declared string
		data           []byte
		want           error
		mention        string
	}{
		"scanned pdf":    {"scan.pdf", "application/pdf", blank, ErrNoText, "OCR"},
		"broken pdf":     {"b.pdf", "application/pdf", []byte("%PDF-1.4 garbage"), ErrMalformed, "b.pdf"},
		"image":          {"cat.png", "image/png", []byte("\x89PNG\r\n\x1a\n0000"), ErrImage, "image"},
		"zip":            {"a.zip", "application/zip", []byte("PK\x03\x04rest"), ErrUnsupported, "application/zip"},
		"binary as text": {"a.txt", "text/plain", []byte("abc\x00\x01\x02def"), ErrUnsupported, "binary"},
		"word document":  {"a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", []byte("PK\x03\x04"), ErrUnsupported, "PDF"},
		"octet, unknown": {"blob", "application/octet-stream", []byte{0x00, 0x01, 0x02, 0xff}, ErrUnsupported, "blob"},
	} {
		_, err := Extract(ctx, tt.data, tt.file, tt.declared, Options{})
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s: Extract = %v, want %v mentioning %q", name, err, tt.want, tt.mention)
		}
	}
}

func TestExtractPDFCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Extract(ctx, makePDF(t, "a"), "a.pdf", "", Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Extract(cancelled ctx) = %v, want context.Canceled", err)
	}
}

func TestTypeByExtAndMediaType(t *testing.T) {
	for in, want := range map[string]string{"A.PDF": TypePDF, "x.md": TypeMarkdown, "y.docx": "", "noext": ""} {
		if got := TypeByExt(in); got != want {
			t.Errorf("TypeByExt(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"Text/HTML; charset=UTF-8": "text/html", "": "", "bad;;": "bad"} {
		if got := MediaType(in); got != want {
			t.Errorf("MediaType(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkExtractPDF(b *testing.B) {
	pages := make([]string, 20)
	for i := range pages {
		pages[i] = fmt.Sprintf("Page %d of the benchmark document with some words.", i+1)
	}
	data := makePDF(b, pages...)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Extract(context.Background(), data, "b.pdf", "", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
