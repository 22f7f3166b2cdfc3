package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/agent/agenttest"
)

// runChat runs `echogate [--config cfg] chat args…` in demo mode (or with vars' model) and
// returns its exit code, stdout and stderr.
func runChat(t *testing.T, vars map[string]string, yaml string, args ...string) (int, string, string) {
	t.Helper()
	if vars["ECHOGATE_DATA_DIR"] == "" {
		vars["ECHOGATE_DATA_DIR"] = t.TempDir()
	}
	if p := writeConfig(t, yaml); p != "" {
		args = append([]string{"--config", p}, args...)
	}
	e, out, errb := testEnv(vars, append([]string{"chat"}, args...)...)
	code := run(context.Background(), e)
	return code, out.String(), errb.String()
}

// TestChatTerminalApprovalInTerminalWords: in `echogate chat` on a terminal, a call that needs
// approval is asked in the terminal's words, above approve? [y]es/[s]ession/[N]o: no Slack
// wording ("React ✅", "Only console-user …"), and the model's words before the call are
// printed once.
func TestChatTerminalApprovalInTerminalWords(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	e, out, errb := testEnv(map[string]string{"ECHOGATE_DATA_DIR": t.TempDir()},
		"--config", writeConfig(t, approvalConfig), "chat")
	e.stdin, e.isTTY = pr, true
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), e) }()
	if _, err := io.WriteString(pw, "what time is it?\n"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, errb, "approve? [y]es")
	if _, err := io.WriteString(pw, "y\n"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, out, "According to the current_time tool")
	pw.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("chat exited %d, want 0", code)
		}
	case <-time.After(30 * time.Second): // a bound for a hang, not a measurement
		t.Fatal("chat did not end at the end of its input")
	}
	all := out.String() + errb.String()
	if n := strings.Count(all, "Let me check the clock"); n != 1 {
		t.Errorf("the model's words before the call were printed %d times, want once:\n%s", n, all)
	}
	for _, bad := range []string{"React ✅", "Only console-user", "**Approval needed**", "```"} {
		if strings.Contains(all, bad) {
			t.Errorf("the terminal shows %q (a chat platform's wording):\n%s", bad, all)
		}
	}
	if !strings.Contains(errb.String(), "🔐 approval needed: run current_time") {
		t.Errorf("stderr = %q, want the call asked in the terminal's words", errb.String())
	}
}

// TestChatOneShotWithoutTerminalSaysNobodyWasAsked: `chat -m` without a terminal does not run a
// call that needs approval, and says nobody was asked instead of "console-user denied it".
func TestChatOneShotWithoutTerminalSaysNobodyWasAsked(t *testing.T) {
	code, out, errb := runChat(t, map[string]string{}, approvalConfig, "-m", "what time is it?")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb)
	}
	if strings.Contains(out, "denied it") || !strings.Contains(out, "nobody was asked") || !strings.Contains(out, "--approve") {
		t.Errorf("stdout = %q, want it to say nobody was asked (no terminal) and how to allow it", out)
	}
	if !strings.Contains(errb, "no terminal to ask") {
		t.Errorf("stderr = %q, want it to say there was no terminal to ask", errb)
	}
}

// TestChatCommandsRenderForTheTerminal: /usage and /help print plain terminal text, not the
// chat platforms' Markdown.
func TestChatCommandsRenderForTheTerminal(t *testing.T) {
	for _, tt := range []struct{ cmd, want string }{
		{"/usage", "Your usage"},
		{"/help", "  • usage: your spend and limits"},
	} {
		code, out, errb := runChat(t, map[string]string{}, "", "-m", tt.cmd)
		if code != 0 || !strings.Contains(out, tt.want) || strings.ContainsAny(out, "*`") {
			t.Errorf("chat -m %s = exit %d, stdout %q, want %q without Markdown (* or `); stderr %s", tt.cmd, code, out, tt.want, errb)
		}
	}
}

// TestChatRejectedAPIKeySaysSo: with an API key the endpoint refuses, `chat -m` prints one
// error naming the cause (check OPENAI_API_KEY), not the users' fallback three times.
func TestChatRejectedAPIKeySaysSo(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-right"})
	defer fake.Close()
	code, out, errb := runChat(t, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-wrong"}, "", "-m", "hello")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var shown []string
	for _, ln := range strings.Split(out+errb, "\n") {
		if !strings.Contains(ln, "level=") && strings.TrimSpace(ln) != "" {
			shown = append(shown, ln)
		}
	}
	text := strings.Join(shown, "\n")
	if len(shown) != 1 || !strings.Contains(text, "check OPENAI_API_KEY") || strings.Contains(text, "try again in a moment") {
		t.Errorf("chat -m with a rejected key printed:\n%s\nwant one error line naming OPENAI_API_KEY", text)
	}
}

// waitOutput waits until b holds want.
func waitOutput(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(waitTimeout); !strings.Contains(b.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("output never showed %q:\n%s", want, b.String())
		}
		time.Sleep(10 * time.Millisecond) // polling a buffer the command writes: nothing to wait on
	}
}
