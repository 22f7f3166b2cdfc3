package sqlite

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMigrateLogsOneLine: a fresh store logs one info line for all the migrations it applied
// (each one only at debug level), and a store already at the current version logs none.
func TestMigrateLogsOneLine(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	path := filepath.Join(t.TempDir(), "echogate.db")
	s, err := New(Config{Path: path}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := builtinMigrations()
	if err != nil {
		t.Fatal(err)
	}
	ems, err := eventMigrations()
	if err != nil {
		t.Fatal(err)
	}
	info, debug := levelLines(buf.String(), "migration")
	if len(info) != 1 || !strings.Contains(info[0], "count="+strconv.Itoa(len(ms)+len(ems))) {
		t.Errorf("Migrate on a fresh store logged at info %q, want one line with count=%d", info, len(ms)+len(ems))
	}
	if len(debug) != len(ms)+len(ems) {
		t.Errorf("Migrate logged %d migrations at debug, want %d", len(debug), len(ms)+len(ems))
	}
	buf.Reset()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := levelLines(buf.String(), "migration"); len(info) != 0 {
		t.Errorf("Migrate on a current store logged %q, want nothing", info)
	}
}

// levelLines are the log lines mentioning word at info and at debug level.
func levelLines(log, word string) (info, debug []string) {
	for _, l := range strings.Split(log, "\n") {
		switch {
		case !strings.Contains(l, word):
		case strings.Contains(l, "level=INFO"):
			info = append(info, l)
		case strings.Contains(l, "level=DEBUG"):
			debug = append(debug, l)
		}
	}
	return info, debug
}
