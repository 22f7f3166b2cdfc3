package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allPaths lists every command and subcommand as its argument words.
func allPaths(list []command, prefix []string) [][]string {
	var out [][]string
	for _, c := range list {
		p := append(append([]string(nil), prefix...), c.name)
		out = append(out, p)
		out = append(out, allPaths(c.subs, p)...)
	}
	return out
}

// TestHelpEveryCommand: help, CMD --help and CMD -h print usage on stdout, exit 0, and read or
// write nothing (no ./data, no data dir, no config file).
func TestHelpEveryCommand(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	dataDir := filepath.Join(cwd, "state")
	vars := map[string]string{"ECHOGATE_DATA_DIR": dataDir, "ECHOGATE_CONFIG": filepath.Join(cwd, "missing.yaml")}
	paths := allPaths(commands, nil)
	// Every command the binary dispatches is in the table the help is built from.
	for _, want := range []string{"serve", "chat", "migrate", "doctor", "knowledge", "memory", "skills", "version", "healthcheck", "help"} {
		if _, ok := findCommand(commands, want); !ok {
			t.Errorf("command %q has no help entry", want)
		}
	}
	for _, p := range paths {
		for _, args := range [][]string{
			append(append([]string(nil), p...), "--help"),
			append(append([]string(nil), p...), "-h"),
			append([]string{"help"}, p...),
		} {
			name := strings.Join(args, " ")
			e, out, errb := testEnv(vars, args...)
			code := run(context.Background(), e)
			if code != 0 {
				t.Errorf("echogate %s: exit %d, want 0 (stderr %q)", name, code, errb.String())
			}
			want := "Usage: echogate " + strings.Join(p, " ")
			if !strings.Contains(out.String(), want) {
				t.Errorf("echogate %s: stdout = %q, want it to contain %q", name, out.String(), want)
			}
			if errb.String() != "" {
				t.Errorf("echogate %s: stderr = %q, want nothing", name, errb.String())
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		e, out, _ := testEnv(vars, args...)
		if code := run(context.Background(), e); code != 0 || !strings.Contains(out.String(), "Commands:") {
			t.Errorf("echogate %v: exit %d, stdout %q; want 0 and the command list", args, code, out.String())
		}
	}
	for _, dir := range []string{"data", "state"} {
		if _, err := os.Stat(filepath.Join(cwd, dir)); err == nil {
			t.Errorf("a help request created ./%s", dir)
		}
	}
}

// TestCLIMistakes: unknown commands and flags exit 2 with a hint, before any side effect.
func TestCLIMistakes(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serv"}, `did you mean "serve"`},
		{[]string{"migrat"}, `did you mean "migrate"`},
		{[]string{"frobnicate"}, "echogate help"},
		{[]string{"--bogus"}, "-bogus"},
		{[]string{"serve", "--bogus"}, "echogate serve --help"},
		{[]string{"serve", "extra"}, "unexpected arguments"},
		{[]string{"migrate", "--dry-run"}, "echogate migrate --help"},
		{[]string{"doctor", "-x"}, "echogate doctor --help"},
		{[]string{"version", "--short"}, "echogate version --help"},
		{[]string{"chat", "--aprove"}, "echogate chat --help"},
		{[]string{"chat", "hello"}, "unexpected arguments"},
		{[]string{"knowledge"}, "add, search, list, rm"},
		{[]string{"knowledge", "serch", "x"}, `did you mean "search"`},
		{[]string{"knowledge", "search", "--top", "3", "x"}, "echogate knowledge search --help"},
		{[]string{"memory", "lst"}, `did you mean "list"`},
		{[]string{"memory", "list", "--usr", "x"}, "echogate memory list --help"},
		{[]string{"skills", "chek"}, `did you mean "check"`},
		{[]string{"help", "nope"}, "unknown command"},
	} {
		e, out, errb := testEnv(map[string]string{}, tt.args...)
		code := run(context.Background(), e)
		if code != 2 || !strings.Contains(errb.String(), tt.want) || out.String() != "" {
			t.Errorf("echogate %v = exit %d, stderr %q, stdout %q; want 2 and a hint containing %q", tt.args, code, errb.String(), out.String(), tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, "data")); err == nil {
		t.Errorf("a mistaken command line created ./data")
	}
}

func TestConsoleURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/",
		"0.0.0.0:8080":   "http://localhost:8080/",
		"[::]:9000":      "http://localhost:9000/",
		"[::1]:8080":     "http://[::1]:8080/",
	} {
		if got := consoleURL(addr); got != want {
			t.Errorf("consoleURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
