package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/memory"
)

// TestMemoryEmbeddingModelChange: memories remembered in demo mode record the demo embedder
// and are labelled so; after switching to a real embedding endpoint they are stale (labelled,
// counted in a start-up warning, never compared with the new model's query vectors, still found
// by full text), `memory reembed` re-embeds them with progress, and a later change of
// embeddings.model makes them stale again until the next reembed.
func TestMemoryEmbeddingModelChange(t *testing.T) {
	for name, db := range backends(t) {
		t.Run(name, func(t *testing.T) {
			fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
			defer fake.Close()
			dir := t.TempDir()
			dbURL, dbLine := db(t), ""
			if dbURL != "" {
				dbLine = fmt.Sprintf("database: {url: %q}\n", dbURL)
			}
			user := "web:u-" + name + "-" + filepath.Base(dir)
			demo := writeConfigIn(t, dir, dbLine+fmt.Sprintf("embeddings: {dimensions: %d}\nmemory: {enabled: true}\n", testDims))
			rememberDemo(t, dir, demo, user, "Favourite editor is Helix", "Lives in Lisbon")
			list := func(cfg string) (string, string) {
				t.Helper()
				code, out, errb := runCmd(t, dir, cfg, "memory", "list", "--user", user)
				if code != 0 || strings.Count(out, "\n") != 2 {
					t.Fatalf("memory list = %d %q %s; want the 2 memories", code, out, errb)
				}
				return out, errb
			}
			if out, errb := list(demo); strings.Count(out, "[demo embeddings: words only, not meaning]") != 2 || strings.Contains(out, "stale") || strings.Contains(errb, "memory reembed") {
				t.Errorf("demo memory list = %q (stderr %q), want 2 memories labelled demo embeddings, none stale, no warning", out, errb)
			}

			real := memConfig(t, dir, fake.URL(), dbURL, "")
			out, errb := list(real)
			if strings.Count(out, "(stale: demo:hash@64; run `echogate memory reembed`)") != 2 {
				t.Errorf("memory list after the switch = %q, want 2 stale memories", out)
			}
			if !strings.Contains(errb, "memory: 2 memories have no vector of fake:embed-model@64") {
				t.Errorf("start-up stderr = %q, want the warning with the count of stale memories", errb)
			}
			// The demo vectors are not compared with the new model's: a query sharing no word
			// finds nothing (with them compared, every memory would be a vector hit), while full
			// text still finds a memory by its words.
			if _, out, _ = runCmd(t, dir, real, "memory", "search", "--user", user, "quokka"); !strings.Contains(out, "no memories found") {
				t.Errorf("search with stale vectors only = %q, want no memories found (stale vectors not compared)", out)
			}
			if _, out, _ = runCmd(t, dir, real, "memory", "search", "--user", user, "Lisbon"); !strings.Contains(out, "Lives in Lisbon") {
				t.Errorf("full-text search with stale vectors = %q, want the memory found by its words", out)
			}

			before := len(fake.EmbeddingRequests())
			code, out, errb := runCmd(t, dir, real, "memory", "reembed")
			if code != 0 || !strings.Contains(out, "memory: 2 re-embedded with fake:embed-model@64") || !strings.Contains(errb, "[2/2] memories re-embedded") {
				t.Fatalf("memory reembed = %d %q %q; want 2 re-embedded, with progress", code, out, errb)
			}
			if len(fake.EmbeddingRequests()) == before {
				t.Error("reembed made no request to the new endpoint")
			}
			if out, errb = list(real); strings.Contains(out, "stale") || strings.Contains(out, "demo") || strings.Contains(errb, "memory reembed") {
				t.Errorf("memory list after reembed = %q (stderr %q), want no labels and no warning", out, errb)
			}
			if _, out, _ = runCmd(t, dir, real, "memory", "reembed"); !strings.Contains(out, "0 re-embedded") {
				t.Errorf("memory reembed once more = %q, want 0 re-embedded", out)
			}

			// Another embedding model: stale again until reembed.
			raw, err := os.ReadFile(real)
			if err != nil {
				t.Fatal(err)
			}
			p := writeConfigIn(t, dir, strings.Replace(string(raw), "model: embed-model,", "model: embed-model-2,", 1))
			if out, _ = list(p); strings.Count(out, "(stale: fake:embed-model@64; run `echogate memory reembed`)") != 2 {
				t.Errorf("memory list after the model change = %q, want 2 stale", out)
			}
			if code, out, errb = runCmd(t, dir, p, "memory", "reembed"); code != 0 || !strings.Contains(out, "2 re-embedded with fake:embed-model-2@64") {
				t.Fatalf("memory reembed after the model change = %d %q %s", code, out, errb)
			}
			if code, _, errb = runCmd(t, dir, p, "memory", "reembed", "extra"); code != 2 || !strings.Contains(errb, "unexpected arguments") {
				t.Errorf("memory reembed extra = %d %q, want exit 2 naming the stray argument", code, errb)
			}
		})
	}
}

// rememberDemo stores texts as user's memories through the memory service in demo mode (the
// offline hash embedder), as the remember tool does.
func rememberDemo(t *testing.T, dir, cfgPath, user string, texts ...string) {
	t.Helper()
	cfg, err := loadConfig(cfgPath, func(k string) string { return map[string]string{"ECHOGATE_DATA_DIR": dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, closeFn, err := openMemKB(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	for _, text := range texts {
		m, err := k.mem.Remember(ctx, memory.Note{Owner: memrec.UserOwner(user), Text: text, UserID: user})
		if err != nil || m.EmbedModel != "demo:hash@64" || len(m.Embedding) != testDims {
			t.Fatalf("demo Remember(%q) = model %q, %d dims, %v; want demo:hash@64 with a vector", text, m.EmbedModel, len(m.Embedding), err)
		}
	}
}
