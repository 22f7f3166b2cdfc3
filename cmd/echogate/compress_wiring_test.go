package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/compress"
	"github.com/echogate/echogate/storage/sqlite"
	"github.com/echogate/echogate/tools"
)

func TestCompressConfig(t *testing.T) {
	dir := t.TempDir()
	for name, tt := range map[string]struct {
		yaml    string
		wantKey string // empty: valid
		limit   int    // the compressor's limit when valid
	}{
		"defaults":           {"models: {default: m}\n", "", 128000*8/10 - promptReserve},
		"small window":       {"models: {default: m, context_windows: {m: 8000}}\nagent: {compress_threshold: 0.5, keep_turns: 2}\n", "", 4000 - promptReserve},
		"threshold too high": {"agent: {compress_threshold: 1.5}\n", "agent.compress_threshold", 0},
		"threshold negative": {"agent: {compress_threshold: -0.2}\n", "agent.compress_threshold", 0},
		"keep turns":         {"agent: {keep_turns: -1}\n", "agent.keep_turns", 0},
		"window too small":   {"models: {context_windows: {m: 512}}\n", "models.context_windows.m", 0},
		"nothing left":       {"models: {context_windows: {m: 1000}}\nagent: {compress_threshold: 0.1}\n", "agent.compress_threshold", 0},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadConfig(path, func(string) string { return "" })
			if tt.wantKey != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Key != tt.wantKey {
					t.Fatalf("loadConfig = %v, want a ConfigError for %s", err, tt.wantKey)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadConfig = %v, want nil", err)
			}
			st, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "echogate.db")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			reg, err := tools.NewRegistry()
			if err != nil {
				t.Fatal(err)
			}
			c := &core{cfg: cfg, log: slog.New(slog.DiscardHandler), store: st, backend: "sqlite", model: agenttest.NewScriptedModel(), tools: reg}
			comp, ok := c.compactor().(*compress.Compressor)
			if !ok || comp == nil {
				t.Fatalf("compactor() = %T, want a *compress.Compressor", c.compactor())
			}
			if got := comp.Limit(); got != tt.limit {
				t.Errorf("compressor limit = %d, want %d", got, tt.limit)
			}
		})
	}
}
