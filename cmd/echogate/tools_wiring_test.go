package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/echogate/echogate/internal/metrics"
)

// Issue 36, finding 8: http_fetch's AllowHosts was never wired to config (app.go). The host
// lists come from tools.http_fetch.allow_hosts / deny_hosts and are checked at start.
func TestHTTPFetchHostListsComeFromConfig(t *testing.T) {
	cfg, err := loadYAML(t, "tools:\n  http_fetch:\n    allow_hosts: [docs.example.com, '*.internal-wiki.example']\n    deny_hosts: [secret.docs.example.com]\n")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	reg, err := newTools(cfg, slog.New(slog.DiscardHandler), metrics.New())
	if err != nil {
		t.Fatalf("newTools = %v", err)
	}
	tool, ok := reg.Get("http_fetch")
	if !ok {
		t.Fatal("http_fetch is not registered")
	}
	for url, want := range map[string]string{
		"https://attacker.example/x?d=secret":   "host attacker.example is not allowed; allowed hosts (and their subdomains): docs.example.com, *.internal-wiki.example",
		"https://secret.docs.example.com/page":  "host secret.docs.example.com is denied by tools.http_fetch.deny_hosts",
		"https://internal-wiki.example/nothing": "not allowed",
	} {
		args, _ := json.Marshal(map[string]string{"url": url})
		res, err := tool.Call(context.Background(), args)
		if err != nil || !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("http_fetch(%s) = %+v, %v, want an IsError result containing %q", url, res, err, want)
		}
	}
	for name, tt := range map[string]struct{ yaml, want string }{
		"bad allow": {"tools: {http_fetch: {allow_hosts: ['https://x.com']}}", "tools.http_fetch: http_fetch: tools.http_fetch.allow_hosts entry \"https://x.com\""},
		"bad deny":  {"tools: {http_fetch: {deny_hosts: ['x.com:443']}}", "tools.http_fetch.deny_hosts entry \"x.com:443\""},
	} {
		cfg, err := loadYAML(t, tt.yaml)
		if err != nil {
			t.Fatalf("%s: loadConfig = %v", name, err)
		}
		cfg.DataDir = t.TempDir()
		if _, err := newTools(cfg, slog.New(slog.DiscardHandler), metrics.New()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: newTools = %v, want an error containing %q", name, err, tt.want)
		}
	}
}

// tools.run_command.allow_paths and env reach the tool.
func TestRunCommandPathsAndEnvComeFromConfig(t *testing.T) {
	reports := t.TempDir()
	t.Setenv("ECHOGATE_TEST_PASSED", "passed-on")
	t.Setenv("ECHOGATE_TEST_KEPT", "kept-back")
	cfg, err := loadYAML(t, "tools:\n  run_command:\n    allowed: [ls, env]\n    allow_paths: ['"+reports+"']\n    env: [ECHOGATE_TEST_PASSED]\n")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	reg, err := newTools(cfg, slog.New(slog.DiscardHandler), metrics.New())
	if err != nil {
		t.Fatalf("newTools = %v", err)
	}
	tool, _ := reg.Get("run_command")
	if tool == nil {
		t.Fatal("run_command is not registered")
	}
	for args, want := range map[string]string{
		`{"command":"ls","args":["` + reports + `"]}`: "exit status 0",
		`{"command":"ls","args":["/etc"]}`:            "tools.run_command.allow_paths",
		`{"command":"env"}`:                           "ECHOGATE_TEST_PASSED=passed-on",
	} {
		res, err := tool.Call(context.Background(), json.RawMessage(args))
		if err != nil || !strings.Contains(res.Content, want) || strings.Contains(res.Content, "kept-back") {
			t.Errorf("run_command(%s) = %+v, %v, want it to contain %q and not the unlisted variable", args, res, err, want)
		}
	}
}
