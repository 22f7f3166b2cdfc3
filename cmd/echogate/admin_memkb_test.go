package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/memrec"
	"github.com/echogate/echogate/storage/sqlite"
)

// TestAdminKnowledgeAndMemoryActions: the console searches and deletes knowledge documents and
// edits and forgets memories through the admin API.
func TestAdminKnowledgeAndMemoryActions(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
	defer fake.Close()
	dir := t.TempDir()
	cfg := memConfig(t, dir, fake.URL(), "", "")
	kb := writeCorpus(t, dir)
	if code, out, errb := runCmd(t, dir, cfg, "knowledge", "add", kb); code != 0 {
		t.Fatalf("knowledge add = %d %q %s", code, out, errb)
	}
	// One memory, written as the remember tool would.
	st, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "echogate.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	mem := memrec.Memory{ID: "m_edit1", Owner: memrec.UserOwner("slack:U1"), Text: "prefers vim", Kind: memrec.KindPreference, Importance: 0.7, Pinned: true, CreatedAt: now, UpdatedAt: now}
	if err := st.PutMemory(ctx, mem); err != nil {
		t.Fatal(err)
	}
	st.Close()

	base, _, stop := startServe(t, map[string]string{"ECHOGATE_DATA_DIR": dir}, "--config", cfg)
	defer stop()

	// The console's Knowledge and Memory tabs are served and use these endpoints.
	resp, err := http.Get(base + "/assets/memkb.js")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"api/knowledge/search", "api/knowledge/upload", "api/knowledge/delete", "api/memory/edit", "api/memory/forget"} {
		if resp.StatusCode != 200 || !strings.Contains(string(js), want) {
			t.Errorf("GET /assets/memkb.js = %d, want the console script using %s", resp.StatusCode, want)
		}
	}
	page, _ := http.Get(base + "/")
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(html), "assets/memkb.js") {
		t.Error("the console page does not load assets/memkb.js")
	}

	var found map[string]any
	if code := apiGet(t, base+"/api/knowledge/search?q=descaled+coffee+machine", "", &found); code != 200 || !strings.Contains(fmt.Sprint(found["passages"]), "notes.txt") {
		t.Errorf("GET /api/knowledge/search = %d %v, want the notes.txt passage", code, found)
	}
	if code := apiGet(t, base+"/api/knowledge/search", "", &found); code != 400 {
		t.Errorf("search without q = %d, want 400", code)
	}
	id := "d_" // the id of notes.txt, from the list
	var docs []memrec.Document
	apiGet(t, base+"/api/knowledge", "", &docs)
	for _, d := range docs {
		if strings.HasSuffix(d.Source, "notes.txt") {
			id = d.ID
		}
	}
	if code, out := adminPost(t, base+"/api/knowledge/delete", "application/json", `{"id":"`+id+`"}`); code != 200 || !strings.HasSuffix(fmt.Sprint(out["source"]), "notes.txt") {
		t.Errorf("POST /api/knowledge/delete = %d %v, want the removed notes.txt", code, out)
	}
	if code, _ := adminPost(t, base+"/api/knowledge/delete", "application/json", `{"id":"`+id+`"}`); code != 404 {
		t.Errorf("deleting it again = %d, want 404", code)
	}
	if code, _ := adminPost(t, base+"/api/knowledge/delete", "text/plain", `{"id":"x"}`); code != http.StatusUnsupportedMediaType {
		t.Errorf("delete with a form content type = %d, want 415", code)
	}

	// Upload: JSON with the file in base64; the same file again is unchanged.
	content := base64.StdEncoding.EncodeToString([]byte("# Handbook\n\nThe release train leaves on Thursdays.\n"))
	for i, want := range []string{`"Added":1`, `"Unchanged":1`} {
		code, out := adminPost(t, base+"/api/knowledge/upload", "application/json", `{"name":"handbook.md","content":"`+content+`"}`)
		if js, _ := json.Marshal(out["report"]); code != 200 || !strings.Contains(string(js), want) || !strings.Contains(fmt.Sprint(out["document"]), filepath.Join("knowledge", "handbook.md")) {
			t.Errorf("upload %d = %d %v, want 200 and %s", i+1, code, out, want)
		}
	}
	if code := apiGet(t, base+"/api/knowledge/search?q=release+train+Thursdays", "", &found); code != 200 || !strings.Contains(fmt.Sprint(found["passages"]), "handbook.md") {
		t.Errorf("search after the upload = %d %v, want the handbook passage", code, found)
	}
	blank := base64.StdEncoding.EncodeToString([]byte("   \n"))
	if code, out := adminPost(t, base+"/api/knowledge/upload", "application/json", `{"name":"blank.md","content":"`+blank+`"}`); code != 422 || !strings.Contains(fmt.Sprint(out["error"]), "no text") {
		t.Errorf("upload of a file without text = %d %v, want 422 saying so", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge", "blank.md")); err == nil {
		t.Error("a rejected upload was left in data_dir/knowledge")
	}
	for body, want := range map[string]int{
		`{"name":"../../etc/x.sh","content":"` + content + `"}`: 400,
		`{"name":".hidden.md","content":"` + content + `"}`:     400,
		`{"name":"a.md","content":"not base64!"}`:               400,
		`{"name":"a.md"}`: 400,
	} {
		if code, out := adminPost(t, base+"/api/knowledge/upload", "application/json", body); code != want {
			t.Errorf("upload %s = %d %v, want %d", body, code, out, want)
		}
	}

	code, out := adminPost(t, base+"/api/memory/edit", "application/json", `{"id":"m_edit1","text":"prefers helix"}`)
	if code != 200 || out["text"] != "prefers helix" || out["kind"] != memrec.KindPreference || out["pinned"] != true {
		t.Fatalf("POST /api/memory/edit = %d %v, want the new text with kind and pin kept", code, out)
	}
	newID, _ := out["id"].(string)
	var ms []memrec.Memory
	apiGet(t, base+"/api/memory?user=slack:U1", "", &ms)
	if len(ms) != 1 || ms[0].Text != "prefers helix" {
		t.Errorf("memories after the edit = %+v, want only the edited one", ms)
	}
	if code, _ := adminPost(t, base+"/api/memory/forget", "application/json", `{"id":"`+newID+`"}`); code != 200 {
		t.Errorf("POST /api/memory/forget = %d, want 200", code)
	}
	apiGet(t, base+"/api/memory?user=slack:U1", "", &ms)
	if len(ms) != 0 {
		t.Errorf("memories after forget = %+v, want none", ms)
	}
	if code, _ := adminPost(t, base+"/api/memory/edit", "application/json", `{"id":"m_gone","text":"x"}`); code != 404 {
		t.Errorf("edit of a missing memory = %d, want 404", code)
	}
}
