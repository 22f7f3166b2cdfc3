package knowledge

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
)

func TestBlocksAndHeadings(t *testing.T) {
	text := "# Guide\n\nIntro para.\n\n## Install\n\nStep one.\nStill step one.\n\n```\n# not a heading\n\ncode\n```\n\n### Linux\n\nUse zypper.\n"
	bs, title := blocks(text, true)
	if title != "Guide" {
		t.Errorf("title = %q, want Guide", title)
	}
	var got []string
	for _, b := range bs {
		got = append(got, b.heading+"|"+strings.ReplaceAll(strings.TrimSpace(text[b.start:b.end]), "\n", "/"))
	}
	want := []string{"Guide|Intro para.", "Guide › Install|Step one./Still step one.", "Guide › Install|```/# not a heading//code/```", "Guide › Install › Linux|Use zypper."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("blocks =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestChunkTextSizesOverlapOffsets(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Doc\n\n")
	for i := range 30 {
		b.WriteString(strings.Repeat("word ", 20))
		b.WriteString("end.\n\n")
		if i == 15 {
			b.WriteString("## Second\n\n")
		}
	}
	text := b.String()
	bs, _ := blocks(text, true)
	cs := chunkText(text, bs, 400, 60)
	if len(cs) < 5 {
		t.Fatalf("chunks = %d, want several", len(cs))
	}
	sawSecond := false
	for i, c := range cs {
		if len(c.Text) > 400 {
			t.Errorf("chunk %d is %d bytes, want <= 400", i, len(c.Text))
		}
		if text[c.Start:c.End] != c.Text || c.Seq != i {
			t.Errorf("chunk %d: offsets %d-%d or seq %d do not match its text", i, c.Start, c.End, c.Seq)
		}
		if strings.Contains(c.Heading, "Second") {
			sawSecond = true
		} else if sawSecond {
			t.Errorf("chunk %d crosses back out of section Second", i)
		}
		if i > 0 && cs[i-1].Heading == c.Heading && c.Start >= cs[i-1].End {
			t.Errorf("chunks %d and %d of one section do not overlap (%d >= %d)", i-1, i, c.Start, cs[i-1].End)
		}
	}
	// A giant paragraph without spaces is still split, never in a UTF-8 character.
	giant := strings.Repeat("é", 1000)
	cs = chunkText(giant, []block{{start: 0, end: len(giant)}}, 300, 0)
	for i, c := range cs {
		if !strings.HasPrefix(c.Text, "é") || len(c.Text) > 300 || !utf8Valid(c.Text) {
			t.Errorf("giant chunk %d = %d bytes, valid %v", i, len(c.Text), utf8Valid(c.Text))
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }

func TestExtractHTML(t *testing.T) {
	ex, err := extract("text/html", []byte(`<html><head><title>T</title><style>p{}</style></head><body><nav>Home</nav><h2>Setup</h2><p>Run <b>make</b> now.</p><script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Setup", "Run make now.", "- one", "- two"} {
		if !strings.Contains(ex.text, want) {
			t.Errorf("html text lacks %q:\n%s", want, ex.text)
		}
	}
	for _, bad := range []string{"alert", "Home", "p{}"} {
		if strings.Contains(ex.text, bad) {
			t.Errorf("html text holds %q:\n%s", bad, ex.text)
		}
	}
	if ex.title != "T" {
		t.Errorf("title = %q, want T", ex.title)
	}
}

func TestExtractPDF(t *testing.T) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.AddPage()
	pdf.SetFont("Helvetica", "", 12)
	pdf.Cell(40, 10, "Quarterly numbers are in the blue folder.")
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		t.Fatal(err)
	}
	ex, err := extract("application/pdf", buf.Bytes())
	if err != nil || !strings.Contains(ex.text, "blue folder") {
		t.Errorf("extract(pdf) = %q, %v; want the page text", ex.text, err)
	}
	if _, err := extract("application/pdf", []byte("%PDF-1.4 garbage")); err == nil {
		t.Error("extract(broken pdf) = nil error, want one")
	}
}

func TestSupportedAndDocID(t *testing.T) {
	for p, want := range map[string]bool{"a.md": true, "b.PDF": true, "c.htm": true, "d.docx": false, "e": false} {
		if Supported(p) != want {
			t.Errorf("Supported(%q) = %v, want %v", p, !want, want)
		}
	}
	if DocID("/a") == DocID("/b") || DocID("/a") != DocID("/a") || !strings.HasPrefix(DocID("/a"), "d_") {
		t.Error("DocID must be stable, distinct per source and start with d_")
	}
}
