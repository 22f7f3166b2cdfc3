package extract

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// rawPDF builds a one-page PDF around a content stream, with a correct xref table.
func rawPDF(content string) []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return []byte(b.String())
}

// PDFs that place words by position instead of space characters lost their spaces
// ("FunctionandDataIndex").
func TestPDFWordSpacing(t *testing.T) {
	for name, tt := range map[string]struct{ content, want string }{
		"TJ word gaps":    {"BT /F1 12 Tf 72 720 Td [(Function)-333(and)-333(Data)-333(Index)] TJ ET", "Function and Data Index"},
		"TJ kerning":      {"BT /F1 12 Tf 72 720 Td [(W)120(ord)-20(s)] TJ ET", "Words"},
		"Td sideways":     {"BT /F1 12 Tf 72 720 Td (Function) Tj 50 0 Td (and) Tj ET", "Function and"},
		"Td new line":     {"BT /F1 12 Tf 72 720 Td (one) Tj 0 -14 Td (two) Tj ET", "one\ntwo"},
		"text objects":    {"BT /F1 12 Tf 72 720 Td (left) Tj ET BT /F1 12 Tf 200 720 Td (right) Tj ET", "left right"},
		"Tm same line":    {"BT /F1 12 Tf 1 0 0 1 72 720 Tm (a) Tj 1 0 0 1 90 720 Tm (b) Tj 1 0 0 1 72 700 Tm (c) Tj ET", "a b\nc"},
		"spaces kept one": {"BT /F1 12 Tf 72 720 Td (a  b ) Tj [( )-400(c)] TJ ET", "a b c"},
	} {
		doc, err := Extract(context.Background(), rawPDF(tt.content), "w.pdf", "", Options{})
		if err != nil || doc.Text != tt.want {
			t.Errorf("%s: Extract = %q, %v; want %q", name, doc.Text, err, tt.want)
		}
	}
}
