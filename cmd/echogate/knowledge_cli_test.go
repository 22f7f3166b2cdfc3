package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKnowledgeCLIOutput: `knowledge add` names and counts the files it cannot read, says
// "1 chunk", and stops on a missing path before printing any summary; `knowledge search` starts
// with its first passage and writes a heading path without the title again; `knowledge list`
// has a header; `compact` says how much space it gave back.
func TestKnowledgeCLIOutput(t *testing.T) {
	dir := t.TempDir()
	kb := filepath.Join(dir, "kb")
	for name, body := range map[string]string{
		"deploy.md":  "# Deploying\n\nIntro to deploying.\n\n## Rollback\n\nTo roll back, run the previous release with the rollback flag.\n",
		"notes.docx": "binary",
		"image.png":  "binary",
		"short.txt":  "A short note.\n",
	} {
		if err := os.MkdirAll(kb, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(kb, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeConfigIn(t, dir, fmt.Sprintf("embeddings: {dimensions: %d}\nknowledge: {enabled: true}\n", testDims))

	code, out, errb := runCmd(t, dir, cfg, "knowledge", "add", kb)
	if code != 0 {
		t.Fatalf("knowledge add = %d %q %s", code, out, errb)
	}
	for _, want := range []string{"2 skipped (not .md, .txt, .html or .pdf): " + filepath.Join(kb, "image.png") + ", " + filepath.Join(kb, "notes.docx"), "short.txt: added (1 chunk)"} {
		if !strings.Contains(out+errb, want) {
			t.Errorf("knowledge add = stdout %q stderr %q, want %q", out, errb, want)
		}
	}
	if strings.Contains(out+errb, "(1 chunks)") {
		t.Errorf("knowledge add = %q, want 1 chunk in the singular", out+errb)
	}

	code, out, errb = runCmd(t, dir, cfg, "knowledge", "add", filepath.Join(dir, "missing.md"))
	if code == 0 || out != "" || !strings.Contains(errb, "missing.md") {
		t.Errorf("knowledge add of a missing path = %d, stdout %q, stderr %q; want an error and no summary", code, out, errb)
	}

	_, out, _ = runCmd(t, dir, cfg, "knowledge", "search", "roll back the previous release")
	if strings.HasPrefix(out, "\n") || !strings.HasPrefix(out, "[") {
		t.Errorf("knowledge search = %q, want it to start with the first passage", out)
	}
	if strings.Contains(out, "Deploying › Deploying") || !strings.Contains(out, "Deploying › Rollback") {
		t.Errorf("knowledge search = %q, want the heading path Deploying › Rollback once", out)
	}

	_, out, _ = runCmd(t, dir, cfg, "knowledge", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^ID\s+CHUNKS\s+BYTES\s+UPDATED\s+EMBEDDINGS\s+SOURCE$`).MatchString(lines[0]) {
		t.Errorf("knowledge list = %q, want a header and two documents", out)
	}

	_, out, errb = runCmd(t, dir, cfg, "compact")
	if !regexp.MustCompile(`\d+(\.\d)? [KMG]?i?B → \d+(\.\d)? [KMG]?i?B on disk \(\d+(\.\d)? [KMG]?i?B reclaimed\)`).MatchString(out) {
		t.Errorf("compact = %q (stderr %q), want the size before and after and what was reclaimed", out, errb)
	}
}
