//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/tooltest"
)

func newRunCommand(t *testing.T, cfg RunCommandConfig) tools.Tool {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	tool, err := NewRunCommand(cfg)
	if err != nil {
		t.Fatalf("NewRunCommand(%+v) = %v", cfg, err)
	}
	return tool
}

func TestRunCommandConfigErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg  RunCommandConfig
		want string
	}{
		"nothing allowed": {RunCommandConfig{Dir: "/tmp"}, "no command is allowed"},
		"no dir":          {RunCommandConfig{Allowed: []string{"ls"}}, "no working directory"},
		"relative path":   {RunCommandConfig{Allowed: []string{"./x"}, Dir: "/tmp"}, "relative path"},
		"with arguments":  {RunCommandConfig{Allowed: []string{"git status"}, Dir: "/tmp"}, "without spaces or arguments"},
		"negative":        {RunCommandConfig{Allowed: []string{"ls"}, Dir: "/tmp", Timeout: -1}, "must not be negative"},
		"bad env":         {RunCommandConfig{Allowed: []string{"ls"}, Dir: "/tmp", Env: []string{"NOEQUALS"}}, "KEY=value"},
	} {
		if _, err := NewRunCommand(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewRunCommand = %v, want error containing %q", name, err, tt.want)
		}
	}
}

func TestRunCommand(t *testing.T) {
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo in PATH")
	}
	dir := t.TempDir()
	t.Setenv("ECHOGATE_TEST_SECRET", "s3cr3t")
	tool := newRunCommand(t, RunCommandConfig{
		Allowed: []string{"sh", "pwd", echo, "no-such-command-echogate"}, Dir: dir, MaxOutput: 1000,
		Env: []string{"GREETING=hi"},
	})
	for name, tt := range map[string]struct {
		args    string
		want    []string
		notWant string
		wantErr bool
	}{
		"ok":             {`{"command":"echo","args":["hello","$HOME","*"]}`, []string{"$ echo hello $HOME *\nexit status 0", "hello $HOME *\n"}, "", false},
		"absolute path":  {fmt.Sprintf(`{"command":%q,"args":["x"]}`, echo), []string{"x\n"}, "", false},
		"runs in dir":    {`{"command":"pwd"}`, []string{dir}, "", false},
		"minimal env":    {`{"command":"sh","args":["-c","echo [$ECHOGATE_TEST_SECRET] $GREETING $HOME"]}`, []string{"[] hi " + dir}, "s3cr3t", false},
		"stderr too":     {`{"command":"sh","args":["-c","echo out; echo err >&2"]}`, []string{"out\n", "err\n"}, "", false},
		"no output":      {`{"command":"sh","args":["-c","true"]}`, []string{"(no output)"}, "", false},
		"exit code":      {`{"command":"sh","args":["-c","echo failing; exit 3"]}`, []string{"exit status 3", "failing"}, "", true},
		"not allowed":    {`{"command":"rm","args":["-rf","/"]}`, []string{`command "rm" is not allowed; allowed commands: ` + echo + `, no-such-command-echogate, pwd, sh`}, "", true},
		"shell line":     {`{"command":"echo hi"}`, []string{`"echo hi" is not allowed`, `pass arguments in "args"`}, "", true},
		"missing":        {`{"args":["x"]}`, []string{`"command" is required`}, "", true},
		"not in PATH":    {`{"command":"no-such-command-echogate"}`, []string{`cannot run "no-such-command-echogate"`}, "", true},
		"args wrong":     {`{"command":"echo","args":"hello"}`, []string{`argument "args" must be an array of strings`}, "", true},
		"args element":   {`{"command":"echo","args":[1]}`, []string{`argument "args`, "must be a string"}, "", true},
		"unknown field":  {`{"command":"echo","shell":true}`, []string{`unknown argument "shell"; allowed arguments: command, args`}, "", true},
		"too many args":  {`{"command":"echo","args":[` + strings.Repeat(`"a",`, maxCommandArgs) + `"a"]}`, []string{"the limit is 64"}, "", true},
		"output capped":  {`{"command":"sh","args":["-c","i=0; while [ $i -lt 300 ]; do printf 0123456789; i=$((i+1)); done"]}`, []string{"[output truncated: 2000 more bytes not shown]"}, "", false},
		"cap keeps utf8": {`{"command":"sh","args":["-c","printf 'x'; i=0; while [ $i -lt 600 ]; do printf 'é'; i=$((i+1)); done"]}`, []string{"[output truncated: 202 more bytes not shown]"}, "\uFFFD", false},
	} {
		res, err := tool.Call(context.Background(), json.RawMessage(tt.args))
		if err != nil || res.IsError != tt.wantErr {
			t.Errorf("%s: Call(%s) = %+v, %v, want IsError %v", name, tt.args, res, err, tt.wantErr)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(res.Content, w) {
				t.Errorf("%s: Call(%s) content = %q, want it to contain %q", name, tt.args, res.Content, w)
			}
		}
		if tt.notWant != "" && strings.Contains(res.Content, tt.notWant) {
			t.Errorf("%s: Call(%s) content = %q, must not contain %q", name, tt.args, res.Content, tt.notWant)
		}
	}
}

func TestRunCommandTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	tool := newRunCommand(t, RunCommandConfig{Allowed: []string{"sh"}, Dir: dir, Timeout: 200 * time.Millisecond})
	// The grandchild (a background sleep) holds stdout open and records its pid.
	res, err := tool.Call(context.Background(), json.RawMessage(`{"command":"sh","args":["-c","sleep 30 & echo $! > child.pid; echo started; wait"]}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "timed out after 200ms: the command was killed") || !strings.Contains(res.Content, "started") {
		t.Fatalf("Call = %+v, %v, want IsError 'timed out after 200ms' with partial output", res, err)
	}
	pidText, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatalf("child did not record its pid: %v", err)
	}
	pid := strings.TrimSpace(string(pidText))
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to check the grandchild")
	}
	// SIGKILL is delivered asynchronously; poll /proc with a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil { // gone
			return
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return // killed, waiting to be reaped by init
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %s still alive after the timeout: %s, want the process group killed", pid, stat)
		}
		time.Sleep(5 * time.Millisecond) // polling an OS process table; no event to wait on
	}
}

func TestRunCommandCallerCancel(t *testing.T) {
	tool := newRunCommand(t, RunCommandConfig{Allowed: []string{"sleep"}, Dir: t.TempDir()})
	if err := tooltest.CheckCancelMidCall(tool, tooltest.Case{Args: json.RawMessage(`{"command":"sleep","args":["30"]}`)}); err != nil {
		t.Fatal(err)
	}
}

func TestRunCommandConformance(t *testing.T) {
	dir := t.TempDir()
	tool := newRunCommand(t, RunCommandConfig{Allowed: []string{"echo", "sleep"}, Dir: dir})
	if got := tool.Spec().Safety; got != tools.Destructive {
		t.Fatalf("Safety = %v, want destructive", got)
	}
	tooltest.RunConformance(t, tool, []tooltest.Case{
		{Name: "echo", Args: json.RawMessage(`{"command":"echo","args":["hi"]}`), WantContains: "hi\n"},
		{Name: "not allowed", Args: json.RawMessage(`{"command":"rm"}`), WantIsError: true, WantContains: "allowed commands: echo, sleep"},
		{Name: "blocks", Args: json.RawMessage(`{"command":"sleep","args":["30"]}`), Blocks: true},
	})
}
