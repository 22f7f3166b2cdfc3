package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadConfig feeds any YAML through the config loader (env expansion, strict decoding,
// defaults, validation): no panic; a refusal names a key or the file.
func FuzzLoadConfig(f *testing.F) {
	for _, s := range []string{
		"http: {addr: 127.0.0.1:8080}\n",
		"agent: {max_iterations: 8, turn_timeout: 5m, on_busy: queue}\n",
		"agent: {max_iterations: 2.5}\n",
		"http:\n  allowed_hosts: [chat.example.com, \"*.corp.example\"]\n",
		"budgets: {per_turn_usd: 0.5, per_day_usd: -1}\n",
		"tools:\n  current_time: {approval: ask}\n  http_fetch: {approval: allow, allow_private: false}\n",
		"mcp:\n  servers:\n    - {name: wx, command: wx-mcp-server, args: [\"--stdio\"]}\n",
		"models:\n  default: ${MODEL}\n  providers: [{name: openai, base_url: ${OPENAI_BASE_URL}, api_key: ${OPENAI_API_KEY}}]\n",
		"unknown_key: 1\n", "{", "- a\n- b\n", "&a [*a, *a]\n", "x: !!binary aGVsbG8=\n", "\xff\xfe", "",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	getenv := func(k string) string {
		if k == "ECHOGATE_DATA_DIR" {
			return dir
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, yaml string) {
		path := filepath.Join(t.TempDir(), "echogate.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadConfig(path, getenv)
		if err != nil && !strings.Contains(err.Error(), "config") && !strings.Contains(err.Error(), ".") && !strings.Contains(err.Error(), "_") {
			t.Fatalf("loadConfig(%q) = %v: the error names neither the file nor a key", yaml, err)
		}
	})
}
