package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/provider/openai"
	"github.com/echogate/echogate/internal/memrec"
)

// testDims keeps the fake's hash embeddings small and fast.
const testDims = 64

// backends returns the database settings the memory tests run on: SQLite always, PostgreSQL
// when DATABASE_URL (or ECHOGATE_TEST_DATABASE_URL) is set, in a schema of its own.
func backends(t *testing.T) map[string]func(t *testing.T) string {
	out := map[string]func(t *testing.T) string{"sqlite": func(*testing.T) string { return "" }}
	base := os.Getenv("ECHOGATE_TEST_DATABASE_URL")
	if base == "" {
		base = os.Getenv("DATABASE_URL")
	}
	if base == "" {
		return out
	}
	out["postgres"] = func(t *testing.T) string {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect to DATABASE_URL: %v", err)
		}
		defer conn.Close(ctx)
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		schema := "echogate_mem_" + hex.EncodeToString(b)
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatalf("create schema: %v", err)
		}
		t.Cleanup(func() {
			c, err := pgx.Connect(context.Background(), base)
			if err == nil {
				_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
				c.Close(context.Background())
			}
		})
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema+",public")
		u.RawQuery = q.Encode()
		return u.String()
	}
	return out
}

func memConfig(t *testing.T, dir, fakeURL, dbURL, extra string) string {
	t.Helper()
	db := ""
	if dbURL != "" {
		db = fmt.Sprintf("database: {url: %q}\n", dbURL)
	}
	return writeConfigIn(t, dir, fmt.Sprintf(`%s
models:
  default: chat-model
  providers: [{name: fake, base_url: %q, api_key: k, max_retries: -1}]
embeddings: {model: embed-model, dimensions: %d}
memory: {enabled: true}
knowledge: {enabled: true, top_k: 3}
%s`, db, fakeURL, testDims, extra))
}

// writeCorpus writes a small knowledge base: Markdown, HTML, text and a generated PDF.
func writeCorpus(t *testing.T, dir string) string {
	t.Helper()
	kb := filepath.Join(dir, "kb")
	if err := os.MkdirAll(filepath.Join(kb, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"install.md":      "# Installing Frobnicator\n\nFrobnicator runs on every platform.\n\n## Linux\n\nOn Linux, install it with `zypper install frobnicator-cli` and start the frobd service.\n\n## macOS\n\nOn macOS, use the signed package from the downloads page.\n",
		"sub/deploy.html": "<html><head><title>Deploying</title><script>var x=1;</script></head><body><nav>menu</nav><h1>Deploying</h1><p>Deployments go out every Tuesday through the blue pipeline.</p><h2>Rollback</h2><p>Roll back with the rewind button in the dashboard.</p></body></html>",
		"notes.txt":       "Team notes.\n\nThe coffee machine on floor three is descaled on Fridays.\n",
		".hidden.md":      "# Secret\n\nnever ingested\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(kb, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.AddPage()
	pdf.SetFont("Helvetica", "", 12)
	pdf.Cell(40, 10, "The office wifi password is Tangerine42.")
	if err := pdf.OutputFileAndClose(filepath.Join(kb, "sub", "office.pdf")); err != nil {
		t.Fatal(err)
	}
	return kb
}

// systemPrompt returns the request's system messages joined: the system prompt (with the frozen
// memory snapshot) and the turn's note (time, knowledge hits) before the new message.
func systemPrompt(r agenttest.ChatRequest) string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == "system" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n\n")
}

var refRE = regexp.MustCompile(`\[(d_[0-9a-f]+#[0-9]+)\][^\n]*› Linux`)

// TestKnowledgeIngestAnswerCites: ingest a small corpus; a question answered by one document
// gets that passage (with its citation id) in the prompt and the answer cites it; re-adding the
// unchanged corpus embeds nothing; a changed file replaces its chunks.
func TestKnowledgeIngestAnswerCites(t *testing.T) {
	for name, db := range backends(t) {
		t.Run(name, func(t *testing.T) {
			fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
			defer fake.Close()
			dir := t.TempDir()
			cfg := memConfig(t, dir, fake.URL(), db(t), "")
			kb := writeCorpus(t, dir)

			code, out, errb := runCmd(t, dir, cfg, "knowledge", "add", kb)
			if code != 0 || !strings.Contains(out, "4 added, 0 updated, 0 unchanged, 0 failed") {
				t.Fatalf("knowledge add = exit %d, out %q, log %s; want 4 files added", code, out, errb)
			}
			embedded := len(fake.EmbeddingRequests())
			if embedded == 0 {
				t.Fatal("knowledge add made no embedding request")
			}

			// The model answers with the citation id it finds next to the Linux passage.
			var mu sync.Mutex
			var prompt string
			fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
				sp := systemPrompt(req)
				mu.Lock()
				prompt = sp
				mu.Unlock()
				m := refRE.FindStringSubmatch(sp)
				if m == nil {
					return agenttest.Answer{Text: "I don't know."}, true
				}
				return agenttest.Answer{Text: "Run zypper install frobnicator-cli [" + m[1] + "]."}, true
			})
			code, out, errb = chatOnce(t, dir, cfg, "How do I install frobnicator on Linux?")
			if code != 0 {
				t.Fatalf("chat = exit %d, log %s", code, errb)
			}
			mu.Lock()
			sp := prompt
			mu.Unlock()
			if !strings.Contains(sp, "## Knowledge base") || !strings.Contains(sp, "zypper install frobnicator-cli") || !strings.Contains(sp, filepath.Join(kb, "install.md")) {
				t.Errorf("system prompt lacks the Linux passage with its source:\n%s", sp)
			}
			m := refRE.FindStringSubmatch(sp)
			if m == nil || !strings.Contains(out, "["+m[1]+"]") {
				t.Errorf("answer %q does not cite the passage id (prompt ids: %v)", out, m)
			}

			// Unchanged: nothing re-embedded.
			before := len(fake.EmbeddingRequests())
			code, out, errb = runCmd(t, dir, cfg, "knowledge", "add", kb)
			if code != 0 || !strings.Contains(out, "0 added, 0 updated, 4 unchanged") || !strings.Contains(out, "0 embedded") {
				t.Fatalf("knowledge add (again) = exit %d, out %q, log %s; want 4 unchanged", code, out, errb)
			}
			if got := len(fake.EmbeddingRequests()); got != before {
				t.Errorf("re-adding an unchanged corpus made %d embedding requests, want 0", got-before)
			}

			// Changed: its chunks are replaced.
			if err := os.WriteFile(filepath.Join(kb, "notes.txt"), []byte("Team notes.\n\nThe espresso machine moved to floor five.\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, _ = runCmd(t, dir, cfg, "knowledge", "add", kb)
			if code != 0 || !strings.Contains(out, "0 added, 1 updated, 3 unchanged") {
				t.Errorf("knowledge add (one changed) = exit %d, out %q; want 1 updated", code, out)
			}
			_, out, _ = runCmd(t, dir, cfg, "knowledge", "search", "descaled coffee machine")
			if strings.Contains(out, "descaled") {
				t.Errorf("old chunk still found after the file changed:\n%s", out)
			}
			// PDF text is searchable.
			_, out, _ = runCmd(t, dir, cfg, "knowledge", "search", "wifi password")
			if !strings.Contains(out, "Tangerine42") || !strings.Contains(out, "office.pdf") {
				t.Errorf("knowledge search (PDF) = %q, want the PDF passage", out)
			}
			_, out, _ = runCmd(t, dir, cfg, "knowledge", "list")
			if strings.Count(out, "\n") != 5 || strings.Contains(out, "hidden") { // a header and a line per document
				t.Errorf("knowledge list = %q, want a header, 4 documents and no hidden file", out)
			}
			code, out, _ = runCmd(t, dir, cfg, "knowledge", "rm", filepath.Join(kb, "notes.txt"))
			if code != 0 || !strings.Contains(out, "removed") {
				t.Errorf("knowledge rm = %d, %q", code, out)
			}
		})
	}
}

func runCmd(t *testing.T, dir, cfg string, args ...string) (int, string, string) {
	t.Helper()
	e, out, errb := testEnv(map[string]string{"ECHOGATE_DATA_DIR": dir}, append([]string{"--config", cfg}, args...)...)
	code := run(context.Background(), e)
	return code, out.String(), errb.String()
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// openTestMemKB opens the configured store and builds memory and knowledge on it with the fake
// as model and embedding endpoint.
func openTestMemKB(t *testing.T, cfgPath string, fake *agenttest.FakeOpenAI, clock *fakeClock, coolDown time.Duration, keyword func()) (*memkb, store) {
	t.Helper()
	cfg, err := loadConfig(cfgPath, func(k string) string { return map[string]string{"ECHOGATE_DATA_DIR": filepath.Dir(cfgPath)}[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, _, err := openStore(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	prov, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "k", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recMu sync.Mutex
	var recs []echogate.UsageRecord
	k, err := newMemKB(ctx, cfg, memkbDeps{store: st, backend: prov, model: prov, now: clock.Now, coolDown: coolDown, keyword: keyword, after: func(time.Duration) <-chan time.Time { return nil },
		record: func(r echogate.UsageRecord) { recMu.Lock(); recs = append(recs, r); recMu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	return k, st
}

// TestEmbeddingOutageKeywordOnly: after three failed embedding calls the breaker opens and
// retrieval runs keyword-only (the section still arrives, no request is sent). The cool-down is
// a minute, longer than the test, so the breaker cannot half-open under it whatever the load:
// gobreaker's timer is wall time. TestEmbeddingBreakerRecovers covers the probe after it.
func TestEmbeddingOutageKeywordOnly(t *testing.T) {
	fake, k, q, keywordOnly := embeddingOutage(t, time.Minute)
	if got := k.emb.State(); got != "open" {
		t.Fatalf("breaker state after 3 failures = %s, want open", got)
	}
	n := len(fake.EmbeddingRequests())
	if text := embedSection(t, k, q, 3); !strings.Contains(text, "zypper install") {
		t.Errorf("keyword-only ContextSection lacks the passage:\n%s", text)
	}
	if got := len(fake.EmbeddingRequests()); got != n {
		t.Errorf("open breaker still sent %d embedding requests, want 0", got-n)
	}
	if *keywordOnly != 4 {
		t.Errorf("keyword-only searches counted = %d, want 4", *keywordOnly)
	}
}

// TestEmbeddingBreakerRecovers: after the cool-down the probe succeeds, the breaker closes and
// vectors are used again.
func TestEmbeddingBreakerRecovers(t *testing.T) {
	fake, k, q, keywordOnly := embeddingOutage(t, 50*time.Millisecond)
	n := len(fake.EmbeddingRequests())
	for k.emb.State() == "open" {
		time.Sleep(10 * time.Millisecond) // the cool-down is gobreaker's wall-time timer
	}
	q.Text = "rollback dashboard button" // not cached
	embedSection(t, k, q, 4)
	if got := k.emb.State(); got != "closed" {
		t.Errorf("breaker state after a successful probe = %s, want closed", got)
	}
	if got := len(fake.EmbeddingRequests()); got != n+1 {
		t.Errorf("embedding requests after recovery = %d, want %d (vectors used again)", got, n+1)
	}
	if *keywordOnly != 3 {
		t.Errorf("keyword-only searches after recovery = %d, want still 3", *keywordOnly)
	}
}

// embeddingOutage opens a knowledge base whose embedding breaker has the given cool-down and
// makes three embedding calls fail: each section still carries the keyword hit.
func embeddingOutage(t *testing.T, coolDown time.Duration) (*agenttest.FakeOpenAI, *memkb, echogate.ContextQuery, *int) {
	t.Helper()
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	cfg := memConfig(t, dir, fake.URL(), "", "")
	kb := writeCorpus(t, dir)
	if code, out, errb := runCmd(t, dir, cfg, "knowledge", "add", kb); code != 0 {
		t.Fatalf("knowledge add = %d %q %s", code, out, errb)
	}
	clock := &fakeClock{now: time.Now()}
	keywordOnly := new(int)
	k, _ := openTestMemKB(t, cfg, fake, clock, coolDown, func() { *keywordOnly++ })
	q := echogate.ContextQuery{Session: "web:s", UserID: "console:alice", Channel: "web:s", Text: "how do I install frobnicator on linux", Budget: 1000}
	fake.EnqueueEmbedding(agenttest.StatusAnswer(500), agenttest.StatusAnswer(500), agenttest.StatusAnswer(500))
	for i := range 3 {
		if text := embedSection(t, k, q, i); !strings.Contains(text, "zypper install") {
			t.Errorf("ContextSection during failure %d lacks the keyword hit:\n%s", i, text)
		}
	}
	return fake, k, q, keywordOnly
}

func embedSection(t *testing.T, k *memkb, q echogate.ContextQuery, i int) string {
	t.Helper()
	_, text, err := k.kb.ContextSection(context.Background(), q)
	if err != nil {
		t.Fatalf("ContextSection %d = %v, want the turn to go on", i, err)
	}
	return text
}

// extractionResponder answers the consolidation model's requests: a fact about the editor in
// the user's words, superseding a listed memory about the editor when there is one. Other
// requests (chat turns) get "ok". calls counts extraction requests; block, when set, stalls them
// until ctx ends (a worker killed mid-job).
type extractionResponder struct {
	mu     sync.Mutex
	prompt string // system prompt of the last chat turn
	calls  int
	block  bool
	held   chan struct{}
}

var listedEditor = regexp.MustCompile(`(?m)^(\d+)\. [^\n]*[Ee]ditor`)

func (x *extractionResponder) respond(req agenttest.ChatRequest) (agenttest.Answer, bool) {
	sp := systemPrompt(req)
	if !strings.Contains(sp, "long-term memory of a chat assistant") {
		x.mu.Lock()
		x.prompt = sp
		x.mu.Unlock()
		return agenttest.Answer{Text: "ok"}, true
	}
	x.mu.Lock()
	x.calls++
	block := x.block
	x.mu.Unlock()
	if block {
		return agenttest.Answer{Hold: x.held, Text: "[]"}, true
	}
	user := req.Messages[len(req.Messages)-1].Content
	convo := user[strings.Index(user, "NEW CONVERSATION"):]
	var facts []map[string]any
	switch {
	case strings.Contains(convo, "Helix"):
		facts = append(facts, map[string]any{"text": "Favourite editor is Helix", "kind": "preference", "importance": 0.7})
	case strings.Contains(convo, "Zed"):
		f := map[string]any{"text": "Favourite editor is Zed (switched from Helix)", "kind": "preference", "importance": 0.8}
		if m := listedEditor.FindStringSubmatch(user); m != nil {
			var n int
			fmt.Sscan(m[1], &n)
			f["supersedes"] = n
		}
		facts = append(facts, f)
	}
	b, _ := json.Marshal(facts)
	if facts == nil {
		b = []byte("[]")
	}
	return agenttest.Answer{Text: string(b)}, true
}

var turnSeq atomic.Int64

// appendTurn writes a turn of console:alice: its record (consolidation reads a person's turns)
// and its two messages.
func appendTurn(t *testing.T, st store, session echogate.SessionKey, user, answer string) {
	t.Helper()
	turn := fmt.Sprintf("t_%s_%d", strings.ReplaceAll(string(session), ":", "_"), turnSeq.Add(1))
	ctx := context.Background()
	if err := st.CreateTurn(ctx, echogate.TurnRecord{ID: turn, Session: session, UserID: "console:alice", Status: echogate.TurnDoneSt, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	err := st.AppendMessages(ctx, session, turn,
		[]echogate.Message{{Role: echogate.RoleUser, Content: user}, {Role: echogate.RoleAssistant, Content: answer}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
}

func editorMemories(t *testing.T, k *memkb, all bool) []memrec.Memory {
	t.Helper()
	ms, err := k.mem.List(context.Background(), memrec.MemoryFilter{Owners: []string{memrec.UserOwner("console:alice")}, Current: !all})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestConsolidationRemembersAndSupersedes: "my favourite editor is Helix" in one session is
// consolidated into a memory; a new session days later gets it in its prompt; "I switched to
// Zed" supersedes it (history kept). A worker killed mid-job and a restart leave no duplicate.
func TestConsolidationRemembersAndSupersedes(t *testing.T) {
	for name, db := range backends(t) {
		t.Run(name, func(t *testing.T) {
			fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
			defer fake.Close()
			x := &extractionResponder{held: make(chan struct{})}
			fake.Respond(x.respond)
			dir := t.TempDir()
			cfg := memConfig(t, dir, fake.URL(), db(t), "")
			clock := &fakeClock{now: time.Date(2031, 5, 4, 9, 0, 0, 0, time.UTC)}
			k, st := openTestMemKB(t, cfg, fake, clock, 0, nil)
			ctx := context.Background()

			s1 := echogate.SessionKey("web:s1-" + name)
			appendTurn(t, st, s1, "My favourite editor is Helix.", "Nice choice!")
			if err := k.mem.Enqueue(ctx, s1, "console:alice", "web:s1"); err != nil {
				t.Fatal(err)
			}
			// Debounced: not due yet.
			if did, err := k.mem.RunOnce(ctx); did || err != nil {
				t.Fatalf("RunOnce before the debounce = %v, %v; want nothing to do", did, err)
			}
			clock.Add(3 * time.Minute)

			// The first worker is killed while the model answers: nothing is written.
			x.mu.Lock()
			x.block = true
			x.mu.Unlock()
			wctx, kill := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { _, err := k.mem.RunOnce(wctx); done <- err }()
			deadline := time.Now().Add(waitTimeout)
			for {
				x.mu.Lock()
				c := x.calls
				x.mu.Unlock()
				if c > 0 || time.Now().After(deadline) {
					break
				}
				select {
				case <-time.After(5 * time.Millisecond):
				}
			}
			kill()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("killed RunOnce = %v, want context.Canceled", err)
			}
			x.mu.Lock()
			x.block = false
			x.mu.Unlock()
			if ms := editorMemories(t, k, true); len(ms) != 0 {
				t.Fatalf("memories after a killed job = %v, want none", ms)
			}
			// "Restart": a new worker (another id) takes the job over once the lease expired.
			k2, _ := openTestMemKB(t, cfg, fake, clock, 0, nil)
			if did, _ := k2.mem.RunOnce(ctx); did {
				t.Fatal("a job under a live lease was taken over")
			}
			clock.Add(6 * time.Minute)
			if did, err := k2.mem.RunOnce(ctx); !did || err != nil {
				t.Fatalf("RunOnce after restart = %v, %v; want the job done", did, err)
			}
			if did, err := k2.mem.RunOnce(ctx); did || err != nil {
				t.Fatalf("RunOnce again = %v, %v; want nothing left", did, err)
			}
			ms := editorMemories(t, k, true)
			if len(ms) != 1 || !strings.Contains(ms[0].Text, "Helix") || ms[0].Kind != "preference" || len(ms[0].Embedding) != testDims {
				t.Fatalf("memories after consolidation = %+v, want one preference about Helix with an embedding", ms)
			}
			if ms[0].EmbedModel != "fake:embed-model@64" {
				t.Errorf("consolidated memory EmbedModel = %q, want fake:embed-model@64 (the worker records the current embedder)", ms[0].EmbedModel)
			}
			// Consolidating the same session again (a new turn without news) adds nothing.
			appendTurn(t, st, s1, "Thanks, bye.", "Bye!")
			_ = k2.mem.Enqueue(ctx, s1, "console:alice", "web:s1")
			clock.Add(3 * time.Minute)
			if did, err := k2.mem.RunOnce(ctx); !did || err != nil {
				t.Fatalf("RunOnce (no news) = %v, %v", did, err)
			}
			if ms := editorMemories(t, k, true); len(ms) != 1 {
				t.Errorf("memories after a second job = %d, want 1 (nothing repeated)", len(ms))
			}

			// Days later, a new session: the memory is in the snapshot.
			clock.Add(72 * time.Hour)
			_, text, err := k2.mem.ContextSection(ctx, echogate.ContextQuery{Session: "web:s2", UserID: "console:alice", Channel: "web:s2", Text: "which editor do I like?", Budget: 600})
			if err != nil || !strings.Contains(text, "Favourite editor is Helix") {
				t.Fatalf("snapshot days later = %q, %v; want the Helix memory", text, err)
			}

			// Switching: the old fact is superseded, history kept.
			s3 := echogate.SessionKey("web:s3-" + name)
			appendTurn(t, st, s3, "Actually I switched to Zed.", "Got it.")
			_ = k2.mem.Enqueue(ctx, s3, "console:alice", "web:s3")
			clock.Add(3 * time.Minute)
			if did, err := k2.mem.RunOnce(ctx); !did || err != nil {
				t.Fatalf("RunOnce (switch) = %v, %v", did, err)
			}
			cur := editorMemories(t, k, false)
			if len(cur) != 1 || !strings.Contains(cur[0].Text, "Zed") {
				t.Fatalf("current memories after the switch = %+v, want only Zed", cur)
			}
			if cur[0].EmbedModel != "fake:embed-model@64" {
				t.Errorf("superseding memory EmbedModel = %q, want fake:embed-model@64", cur[0].EmbedModel)
			}
			all := editorMemories(t, k, true)
			if len(all) != 2 {
				t.Fatalf("all memories after the switch = %d, want 2 (history kept)", len(all))
			}
			for _, m := range all {
				if strings.Contains(m.Text, "Helix") && !strings.Contains(m.Text, "Zed") && m.SupersededBy != cur[0].ID {
					t.Errorf("Helix memory superseded by %q, want %s", m.SupersededBy, cur[0].ID)
				}
			}
			_, text, _ = k2.mem.ContextSection(ctx, echogate.ContextQuery{UserID: "console:alice", Text: "which editor do I like?", Budget: 600})
			if !strings.Contains(text, "Zed") || strings.Contains(text, "Favourite editor is Helix (") {
				t.Errorf("snapshot after the switch = %q, want Zed only", text)
			}

			// And through a real turn: the new session's prompt holds the memory.
			if code, _, errb := chatOnce(t, dir, cfg, "which editor do I like?", "--user", "alice", "--session", "s4"); code != 0 {
				t.Fatalf("chat = %d: %s", code, errb)
			}
			x.mu.Lock()
			defer x.mu.Unlock()
			if !strings.Contains(x.prompt, "Favourite editor is Zed") {
				t.Errorf("turn prompt lacks the memory:\n%s", x.prompt)
			}
		})
	}
}
