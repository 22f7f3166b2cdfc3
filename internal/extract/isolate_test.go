package extract

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func hostilePDF(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/xref-bomb.pdf")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The 1,069-byte PDF whose xref subsection claims object 999999999 made the PDF reader allocate
// 32 GB ("fatal error: out of memory", which recover does not catch).
func TestHostilePDFRefused(t *testing.T) {
	data := hostilePDF(t)
	if len(data) != 1069 || !strings.Contains(string(data), "\n0999999999 8\n") {
		t.Fatalf("fixture is %d bytes; want the 1,069-byte PDF with the xref line 0999999999 8", len(data))
	}
	_, err := Extract(context.Background(), data, "bomb.pdf", "application/pdf", Options{})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "bomb.pdf") || !strings.Contains(err.Error(), "999999999") {
		t.Fatalf("Extract(xref bomb) = %v, want ErrMalformed naming the file and object 999999999", err)
	}
}

// Without the pre-check the child dies of it; the parent reports it and lives.
func TestHostilePDFContainedInChild(t *testing.T) {
	_, err := runChild(context.Background(), childRequest{Data: hostilePDF(t), Label: "bomb.pdf", Deadline: ChildTimeout, Unchecked: true})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "bomb.pdf") || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("runChild(unchecked xref bomb) = %v, want ErrMalformed saying it needs too much memory", err)
	}
	// The process is alive and a good file still reads.
	doc, err := Extract(context.Background(), makePDF(t, "still here"), "ok.pdf", "", Options{})
	if err != nil || doc.Text != "still here" {
		t.Fatalf("Extract(good pdf) after a contained crash = %q, %v; want the text", doc.Text, err)
	}
}

func TestCheckPDF(t *testing.T) {
	pad := strings.Repeat(" ", 8000) // a file of 8 KB may name up to 1000+64Ki objects
	for name, tt := range map[string]struct {
		pdf string
		ok  bool
	}{
		"small table":        {"%PDF-1.4\nxref\n0 3\n0000000000 65535 f \n0000000010 00000 n \n0000000020 00000 n \ntrailer\n<< /Size 3 >>", true},
		"two subsections":    {"%PDF-1.4\nxref\n0 1\n0000000000 65535 f \n40 1\n0000000010 00000 n \ntrailer\n<< /Size 41 >>", true},
		"huge start":         {"%PDF-1.4\nxref\n0999999999 8\n0000000000 65535 f \ntrailer\n<<>>", false},
		"huge second":        {"%PDF-1.4\nxref\n0 1\n0000000000 65535 f \n99999999 1\n0000000010 00000 n \ntrailer\n<<>>", false},
		"huge size":          {"%PDF-1.5\n<< /Type /XRef /Size 4000000000 >>", false},
		"huge index":         {"%PDF-1.5\n<< /Type /XRef /Size 10 /Index [0 5 900000000 5] >>", false},
		"overlong number":    {"%PDF-1.5\n<< /Size 0000000000000000000001 >>", false},
		"startxref ignored":  {"%PDF-1.4\nstartxref\n999999999\n%%EOF", true},
		"size within a page": {"%PDF-1.4" + pad + "<< /Size 60000 >>", true},
	} {
		err := checkPDF([]byte(tt.pdf), "t.pdf")
		if (err == nil) != tt.ok {
			t.Errorf("%s: checkPDF = %v, want ok %v", name, err, tt.ok)
		}
	}
}
