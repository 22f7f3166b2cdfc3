//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 36, finding 2: `cat /proc/<pid>/environ`, absolute paths and `..` reached anything the
// gateway's user can read. Arguments that name a path outside the working directory are refused,
// with the argument and the config key named, unless tools.run_command.allow_paths lists it.
func TestRunCommandConfinesPathArguments(t *testing.T) {
	dir := t.TempDir()
	reports := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("inside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(reports, "q3.txt"), []byte("report\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tool := newRunCommand(t, RunCommandConfig{Allowed: []string{"cat", "echo", "sh"}, Dir: dir, AllowPaths: []string{reports}})
	refused := []string{
		"/proc/1/environ",
		"/etc/passwd",
		"../secret",
		"a/../../b",
		"..",
		"--file=/etc/shadow",
		"--dir=../..",
		"-f/etc/passwd",
		"-o../x",
		"~",
		"~/.ssh/id_ed25519",
		"--key=~root/x",
		"@/etc/passwd",
		"x:/etc/passwd",
		"file:///etc/passwd",
		"cat /etc/passwd",
		"cd ..; cat x",
		"cat$IFS/etc/passwd",
		"${HOME}/../x",
		"$(echo /)etc/passwd",
		"`echo /`etc",
		reports + "/../" + filepath.Base(dir) + "/../x",
	}
	for _, a := range refused {
		args, _ := json.Marshal(map[string]any{"command": "echo", "args": []string{"ok", a}})
		res, err := tool.Call(context.Background(), args)
		if err != nil || !res.IsError || !strings.Contains(res.Content, "args[1]") || !strings.Contains(res.Content, "tools.run_command.allow_paths") {
			t.Errorf("Call(echo ok %q) = %+v, %v, want an IsError result naming args[1] and tools.run_command.allow_paths", a, res, err)
		}
	}
	allowed := map[string]string{
		"notes.txt":                  "inside",
		"./notes.txt":                "inside",
		"sub/../notes.txt":           "inside",
		dir + "/notes.txt":           "inside",
		reports + "/q3.txt":          "report",
		"--help-is-not-a-path":       "",
		"https://example.com/a/b":    "",
		"a-b_c.d":                    "",
		"ratio 1/2 of the work done": "",
	}
	for a, want := range allowed {
		cmd := "echo"
		if want != "" {
			cmd = "cat"
		}
		args, _ := json.Marshal(map[string]any{"command": cmd, "args": []string{a}})
		res, err := tool.Call(context.Background(), args)
		if strings.Contains(res.Content, "allow_paths") || err != nil {
			t.Errorf("Call(%s %q) = %+v, %v, want it run", cmd, a, res, err)
		} else if want != "" && !strings.Contains(res.Content, want) {
			t.Errorf("Call(%s %q) content = %q, want %q", cmd, a, res.Content, want)
		}
	}
}

func TestRunCommandAllowPathsMustBeAbsolute(t *testing.T) {
	for _, p := range []string{"reports", "", "../x"} {
		if _, err := NewRunCommand(RunCommandConfig{Allowed: []string{"ls"}, Dir: "/tmp", AllowPaths: []string{p}}); err == nil || !strings.Contains(err.Error(), "allow_paths") {
			t.Errorf("NewRunCommand(AllowPaths %q) = %v, want an error naming allow_paths", p, err)
		}
	}
}

// Commands get PATH, HOME, LANG, TMPDIR and the variables the operator passes by name, never the
// rest of the gateway's environment.
func TestRunCommandPassesOnlyListedEnvironment(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-must-not-leak")
	t.Setenv("GIT_AUTHOR_NAME", "Echo Gate")
	tool := newRunCommand(t, RunCommandConfig{Allowed: []string{"env"}, PassEnv: []string{"GIT_AUTHOR_NAME", "UNSET_ECHOGATE_VAR"}})
	res, err := tool.Call(context.Background(), json.RawMessage(`{"command":"env"}`))
	if err != nil || res.IsError {
		t.Fatalf("Call(env) = %+v, %v", res, err)
	}
	if strings.Contains(res.Content, "xoxb-must-not-leak") || !strings.Contains(res.Content, "GIT_AUTHOR_NAME=Echo Gate") || strings.Contains(res.Content, "UNSET_ECHOGATE_VAR") {
		t.Errorf("env = %q, want GIT_AUTHOR_NAME passed, the unset name skipped and no SLACK_BOT_TOKEN", res.Content)
	}
	if _, err := NewRunCommand(RunCommandConfig{Allowed: []string{"env"}, Dir: "/tmp", PassEnv: []string{"A=B"}}); err == nil || !strings.Contains(err.Error(), "tools.run_command.env") {
		t.Errorf("NewRunCommand(PassEnv %q) = %v, want an error naming tools.run_command.env", "A=B", err)
	}
}
