package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
)

// TestKnowledgeEmbeddingModelChange: documents added in demo mode are labelled as demo
// embeddings; after switching to a real embedding endpoint they are listed as stale, adding the
// unchanged files again re-embeds them (instead of skipping them), and a later change of
// embeddings.model is caught up by `knowledge reembed`.
func TestKnowledgeEmbeddingModelChange(t *testing.T) {
	for name, db := range backends(t) {
		t.Run(name, func(t *testing.T) {
			fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
			defer fake.Close()
			dir := t.TempDir()
			kb := writeCorpus(t, dir)
			dbURL, dbLine := db(t), ""
			if dbURL != "" {
				dbLine = fmt.Sprintf("database: {url: %q}\n", dbURL)
			}
			demo := writeConfigIn(t, dir, dbLine+fmt.Sprintf("embeddings: {dimensions: %d}\nknowledge: {enabled: true}\n", testDims))
			if code, out, errb := runCmd(t, dir, demo, "knowledge", "add", kb); code != 0 || !strings.Contains(out, "4 added") {
				t.Fatalf("demo knowledge add = %d %q %s", code, out, errb)
			}
			_, out, _ := runCmd(t, dir, demo, "knowledge", "list")
			if strings.Count(out, "[demo embeddings: words only, not meaning]") != 4 || strings.Contains(out, "stale") {
				t.Errorf("demo knowledge list = %q, want 4 documents labelled as demo embeddings, none stale", out)
			}

			real := memConfig(t, dir, fake.URL(), dbURL, "")
			_, out, errb := runCmd(t, dir, real, "knowledge", "list")
			if strings.Count(out, "(stale: run `echogate knowledge reembed`)") != 4 {
				t.Errorf("knowledge list after the switch = %q, want 4 stale documents", out)
			}
			before := len(fake.EmbeddingRequests())
			code, out, errb := runCmd(t, dir, real, "knowledge", "add", kb)
			if code != 0 || !strings.Contains(out, "0 added, 0 updated, 0 unchanged, 0 failed, 4 re-embedded") {
				t.Fatalf("knowledge add after the switch = %d %q %s; want the 4 unchanged files re-embedded", code, out, errb)
			}
			if len(fake.EmbeddingRequests()) == before {
				t.Error("re-embedding made no request to the new endpoint")
			}
			_, out, _ = runCmd(t, dir, real, "knowledge", "list")
			if strings.Count(out, "[fake:embed-model@64]") != 4 || strings.Contains(out, "stale") {
				t.Errorf("knowledge list after re-embedding = %q, want 4 documents of fake:embed-model@64", out)
			}
			if _, out, _ = runCmd(t, dir, real, "knowledge", "add", kb); !strings.Contains(out, "4 unchanged") {
				t.Errorf("knowledge add once more = %q, want 4 unchanged", out)
			}

			// Another embedding model: reembed catches up every document, with progress.
			raw, err := os.ReadFile(real)
			if err != nil {
				t.Fatal(err)
			}
			p := writeConfigIn(t, dir, strings.Replace(string(raw), "model: embed-model,", "model: embed-model-2,", 1))
			if _, out, _ = runCmd(t, dir, p, "knowledge", "search", "descaled coffee machine"); !strings.Contains(out, "notes.txt") {
				t.Errorf("search with stale vectors = %q, want the passage found by full text", out)
			}
			code, out, errb = runCmd(t, dir, p, "knowledge", "reembed")
			if code != 0 || !strings.Contains(out, "4 re-embedded") {
				t.Fatalf("knowledge reembed = %d %q %s", code, out, errb)
			}
			if _, out, _ = runCmd(t, dir, p, "knowledge", "list"); strings.Count(out, "[fake:embed-model-2@64]") != 4 {
				t.Errorf("knowledge list after reembed = %q", out)
			}
		})
	}
}
