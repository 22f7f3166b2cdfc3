package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestStorageConfig(t *testing.T) {
	for name, tt := range map[string]struct {
		vars map[string]string
		want string // part of the error; "" means valid
	}{
		"defaults":           {nil, ""},
		"full sync":          {map[string]string{"ECHOGATE_STORAGE_SYNC": "FULL"}, ""},
		"bad sync":           {map[string]string{"ECHOGATE_STORAGE_SYNC": "always"}, "storage.sync"},
		"days":               {map[string]string{"ECHOGATE_STORAGE_RETENTION": "90d", "ECHOGATE_STORAGE_EVENT_RETENTION": "7d"}, ""},
		"short event record": {map[string]string{"ECHOGATE_STORAGE_EVENT_RETENTION": "5m"}, "storage.event_retention"},
		"short retention":    {map[string]string{"ECHOGATE_STORAGE_RETENTION": "2h"}, "storage.retention"},
	} {
		t.Run(name, func(t *testing.T) {
			vars := map[string]string{"ECHOGATE_DATA_DIR": t.TempDir()}
			for k, v := range tt.vars {
				vars[k] = v
			}
			cfg, err := loadConfig("", func(k string) string { return vars[k] })
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("loadConfig = %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("loadConfig = %v, want an error naming %s", err, tt.want)
			case tt.want != "":
				return
			}
			if name == "defaults" && (cfg.Storage.Sync != "normal" || time.Duration(cfg.Storage.EventRetention) != 72*time.Hour || cfg.Storage.Retention != 0) {
				t.Errorf("defaults = %+v, want normal sync, 72h event records, transcripts kept", cfg.Storage)
			}
			if name == "days" && time.Duration(cfg.Storage.Retention) != 90*24*time.Hour {
				t.Errorf("storage.retention 90d = %s, want 2160h", time.Duration(cfg.Storage.Retention))
			}
		})
	}
}

// TestCompactCommand: `echogate compact` on a data dir with an answered turn applies retention
// and vacuums.
func TestCompactCommand(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"ECHOGATE_DATA_DIR": dir}
	e, out, errb := testEnv(vars, "chat", "-m", "hello")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("chat = %d: %s", code, errb)
	}
	e, out, errb = testEnv(vars, "compact")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("compact = %d: %s", code, errb)
	}
	if !strings.Contains(out.String(), "compacted the sqlite store: 1 event payloads cleared") {
		t.Errorf("compact printed %q, want the payload of the answered event cleared", out)
	}
}
