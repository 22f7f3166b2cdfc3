//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/echogate/echogate/tools/builtin"
)

const (
	hardenHelperEnv = "ECHOGATE_TEST_HARDEN_HELPER" // "harden" or "plain": run as the helper
	hardenWorkEnv   = "ECHOGATE_TEST_HARDEN_DIR"
	hardenTokenEnv  = "SLACK_BOT_TOKEN"
	fakeToken       = "xoxb-0000000000-0000000000000-ThisIsNotARealTokenAtAll"
)

// Issue 36, finding 2: `cat /proc/<gateway pid>/environ` through run_command printed
// SLACK_BOT_TOKEN. The gateway is a process started from this test binary (helper pattern), so
// the process that hardens itself is the one whose environment a real child tries to read.
// Without hardenProcess the same child reads the token: the test shows it can fail.
func TestRunCommandCannotReadTheGatewayEnvironment(t *testing.T) {
	exe := hardenHelperBinary(t)
	for _, tt := range []struct {
		mode      string
		wantLeak  bool
		wantInOut string
	}{
		{"plain", true, ""},
		{"harden", false, "Permission denied"},
	} {
		out := runHardenHelper(t, exe, tt.mode)
		leaked := strings.Contains(out, "LEAKED=true")
		if !strings.Contains(out, "LEAKED=") {
			t.Fatalf("%s: helper output = %q, want a LEAKED= line", tt.mode, out)
		}
		if leaked != tt.wantLeak || !strings.Contains(out, tt.wantInOut) {
			t.Errorf("%s gateway: child reading /proc/<gateway>/environ: leaked = %v, want %v (output %q, want it to contain %q)", tt.mode, leaked, tt.wantLeak, out, tt.wantInOut)
		}
	}
}

// TestHardenHelperProcess is the gateway of the test above; it does nothing in a normal run.
func TestHardenHelperProcess(t *testing.T) {
	mode := os.Getenv(hardenHelperEnv)
	if mode == "" {
		return
	}
	if mode == "harden" {
		hardenProcess(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}
	tool, err := builtin.NewRunCommand(builtin.RunCommandConfig{Allowed: []string{"cat"}, Dir: os.Getenv(hardenWorkEnv), AllowPaths: []string{"/proc"}})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"command": "cat", "args": []string{fmt.Sprintf("/proc/%d/environ", os.Getpid())}})
	res, err := tool.Call(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("LEAKED=%v\n%s\n", strings.Contains(res.Content, fakeToken), strings.ReplaceAll(res.Content, fakeToken, "<token>"))
}

// hardenHelperBinary is this test binary, copied where another user can run it when the test
// runs as root (root's CAP_SYS_PTRACE reads any process; the gateway must not run as root).
func hardenHelperBinary(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		return self
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "gateway.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}

func runHardenHelper(t *testing.T, exe, mode string) string {
	work := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(work), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestHardenHelperProcess$", "-test.count=1")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), hardenHelperEnv + "=" + mode, hardenWorkEnv + "=" + work, hardenTokenEnv + "=" + fakeToken}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s helper: %v\n%s", mode, err, out.String())
	}
	return out.String()
}
