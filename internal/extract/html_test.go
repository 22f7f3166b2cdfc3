package extract

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s: %v (run go test -update to create it)", path, err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch (run go test -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestHTMLToTextGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "html", "*.html"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/html/*.html: %v", err)
	}
	for _, f := range files {
		in, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		title, text := HTMLToText(in)
		in.Close()
		golden(t, strings.TrimPrefix(strings.TrimSuffix(f, ".html"), "testdata"+string(filepath.Separator))+".golden",
			"Title: "+title+"\n---\n"+text+"\n")
	}
}

func TestHTMLToTextDropsNoise(t *testing.T) {
	for name, tt := range map[string]struct {
		in      string
		want    string
		notWant string
	}{
		"script":         {`<p>a</p><script>evil()</script><p>b</p>`, "a\n\nb", "evil"},
		"style":          {`<style>p{}</style>text`, "text", "p{}"},
		"nav":            {`<nav><a>Home</a></nav><p>body</p>`, "body", "Home"},
		"nested same":    {`<nav><nav>x</nav>still nav</nav>out`, "out", "still"},
		"aria hidden":    {`<span aria-hidden="true">icon</span>label`, "label", "icon"},
		"inline spacing": {`a<b>b</b> <i>c</i>`, "ab c", ""},
		"entities":       {`<p>1 &lt; 2 &amp;&amp; &quot;x&quot;</p>`, `1 < 2 && "x"`, ""},
		"heading":        {`<h2>Title  here</h2><p>p</p>`, "## Title here\n\np", ""},
		"ordered":        {`<ol><li>x</li><li>y</li></ol>`, "1. x\n2. y", ""},
		"table":          {`<table><tr><td>a</td><td>b</td></tr></table>`, "a | b", ""},
	} {
		_, got := HTMLToText(strings.NewReader(tt.in))
		if got != tt.want {
			t.Errorf("%s: HTMLToText(%q) = %q, want %q", name, tt.in, got, tt.want)
		}
		if tt.notWant != "" && strings.Contains(got, tt.notWant) {
			t.Errorf("%s: HTMLToText(%q) = %q, must not contain %q", name, tt.in, got, tt.notWant)
		}
	}
}

func BenchmarkHTMLToText(b *testing.B) {
	page, err := os.ReadFile(filepath.Join("testdata", "html", "article.html"))
	if err != nil {
		b.Fatal(err)
	}
	big := []byte(strings.Repeat(string(page), 100)) // ~200 KiB, near the default read cap
	b.SetBytes(int64(len(big)))
	b.ReportAllocs()
	for b.Loop() {
		HTMLToText(strings.NewReader(string(big)))
	}
}
