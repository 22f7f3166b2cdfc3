package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// hostilePDF is the 1,069-byte PDF whose xref subsection header "0999999999 8" made the PDF
// reader allocate 32 GB ("fatal error: out of memory", beyond any recover).
func hostilePDF(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "extract", "testdata", "xref-bomb.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// `echogate knowledge add` on a folder holding the hostile PDF: that file fails with a clear
// message, the others are added, and the process exits normally.
func TestHostilePDFKnowledgeAdd(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
	defer fake.Close()
	dir := t.TempDir()
	cfg := memConfig(t, dir, fake.URL(), "", "")
	kb := filepath.Join(dir, "kb")
	if err := os.MkdirAll(kb, 0o750); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"bomb.pdf": hostilePDF(t), "notes.md": []byte("# Notes\n\nThe blue folder holds the numbers.\n")} {
		if err := os.WriteFile(filepath.Join(kb, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binaryPath(t), "--config", cfg, "knowledge", "add", kb)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "ECHOGATE_DATA_DIR=" + dir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String() + stderr.String()
	if strings.Contains(out, "fatal error") || strings.Contains(out, "out of memory") && !strings.Contains(out, "bomb.pdf") {
		t.Fatalf("knowledge add crashed: %v\n%s", err, out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 && code != 1 {
		t.Fatalf("knowledge add exit %d, want 0 or 1 (a failed file):\n%s", code, out)
	}
	if !strings.Contains(out, "1 added") || !strings.Contains(out, "1 failed") || !strings.Contains(out, "bomb.pdf") || !strings.Contains(out, "damaged PDF") {
		t.Errorf("knowledge add output = %q, want notes.md added and bomb.pdf failed as a damaged PDF", out)
	}
	t.Logf("knowledge add: %s", strings.TrimSpace(out))
}

// The hostile PDF as a Slack attachment in a running gateway (the binary): the user gets a clear
// message, the process lives; killed while the turn runs and restarted on the same store, the
// start-up replay does not crash it either (before, it crashed again at every start).
func TestHostilePDFSlackAttachment(t *testing.T) {
	model := fileModel(t)
	p, srv := newSlackPlatform(t)
	dir := t.TempDir()
	vars := map[string]string{"OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": "sk-e2e", "ECHOGATE_DATA_DIR": dir}
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startBinaryGateway(t, vars, "")
	waitReadyz(t, g.base, 200, "slack", func(s string) bool { return strings.Contains(s, "connected") })

	c := p.newConv(t, "[bomb]")
	c.thread = fmt.Sprintf("%d.%06d", 1700000000+convSeq.Add(1), 1)
	file := srv.AddFile(slacktest.File{Name: "bomb.pdf", MIME: "application/pdf", Data: hostilePDF(t)})
	if _, err := srv.Push(slacktest.WithFiles(slacktest.Mention(c.ch, p.requester, c.thread, "", "<@"+srv.BotUserID()+"> summarize this [bomb]"), file), slacktest.Delivery{}); err != nil {
		t.Fatal(err)
	}
	msg := c.waitMsg(t, "I could not read it", "bomb.pdf", "damaged PDF")
	t.Logf("answer: %s", msg.Text)
	if status, _ := readyz(t, g.base); status != 200 {
		t.Fatalf("readyz after the hostile PDF = %d, want 200", status)
	}

	// Again, killed while the file is read: the event is replayed at the next start.
	c2 := p.newConv(t, "[bomb2]")
	c2.thread = fmt.Sprintf("%d.%06d", 1700000000+convSeq.Add(1), 2)
	requests := len(model.ChatRequests())
	if _, err := srv.Push(slacktest.WithFiles(slacktest.Mention(c2.ch, p.requester, c2.thread, "", "<@"+srv.BotUserID()+"> summarize this [bomb2]"), file), slacktest.Delivery{}); err != nil {
		t.Fatal(err)
	}
	g.logs.waitMatch(t, "the model's read_file call", func(string) bool { return len(model.ChatRequests()) > requests })
	g.kill()
	g2 := startBinaryGateway(t, vars, "")
	waitReadyz(t, g2.base, 200, "slack", func(s string) bool { return strings.Contains(s, "connected") })
	c2.waitMsg(t, "I could not read it", "bomb.pdf")
	if status, _ := readyz(t, g2.base); status != 200 {
		t.Fatalf("readyz after the restart = %d, want 200", status)
	}
	if strings.Contains(g2.logs.String(), "fatal error") {
		t.Errorf("the restarted gateway logged a fatal error:\n%s", g2.logs.String())
	}
}
