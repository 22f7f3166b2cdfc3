package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestTopLevelHelpListsEveryCommand: `echogate help` names every command and subcommand of the
// table the binary dispatches from (reembed, schedule and mcp included).
func TestTopLevelHelpListsEveryCommand(t *testing.T) {
	e, out, _ := testEnv(map[string]string{}, "help")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("echogate help = exit %d", code)
	}
	help := out.String()
	for _, c := range commands {
		if !strings.Contains(help, "\n  "+c.name) {
			t.Errorf("echogate help lacks the command %q:\n%s", c.name, help)
		}
		for _, s := range c.subs {
			if !regexp.MustCompile(`\b` + c.name + ` [a-z|]*\b` + s.name + `\b`).MatchString(help) {
				t.Errorf("echogate help lacks %s %s:\n%s", c.name, s.name, help)
			}
		}
	}
}

// TestHelpIsWholeAndFlagsAreDashed: a command's help shows each subcommand's whole summary (not
// its first line cut mid-sentence), only the flags the command takes, and every long flag as
// --name, as the usage lines write them.
func TestHelpIsWholeAndFlagsAreDashed(t *testing.T) {
	singleDash := regexp.MustCompile(`(?m)^\s+-[a-z]{2,}`)
	for _, p := range allPaths(commands, nil) {
		e, out, _ := testEnv(map[string]string{}, append(p, "--help")...)
		if code := run(context.Background(), e); code != 0 {
			t.Fatalf("echogate %v --help = exit %d", p, code)
		}
		help := out.String()
		if m := singleDash.FindString(help); m != "" {
			t.Errorf("echogate %s --help prints the flag %q with one dash, want --:\n%s", strings.Join(p, " "), strings.TrimSpace(m), help)
		}
		c := commandAt(p)
		for _, s := range c.subs {
			for _, line := range strings.Split(s.summary, "\n") {
				if !strings.Contains(help, line) {
					t.Errorf("echogate %s --help lacks %q of %s's summary:\n%s", strings.Join(p, " "), line, s.name, help)
				}
			}
		}
	}
	for args, absent := range map[string][]string{
		"memory forget": {"--all", "--limit"},
		"memory search": {"--all"},
	} {
		e, out, _ := testEnv(map[string]string{}, append(strings.Fields(args), "--help")...)
		run(context.Background(), e)
		for _, a := range absent {
			if strings.Contains(out.String(), a) {
				t.Errorf("echogate %s --help shows %s, which it does not take:\n%s", args, a, out.String())
			}
		}
		if !strings.Contains(out.String(), "--user") {
			t.Errorf("echogate %s --help lacks --user:\n%s", args, out.String())
		}
	}
}

func commandAt(p []string) command {
	list := commands
	var c command
	for _, n := range p {
		c, _ = findCommand(list, n)
		list = c.subs
	}
	return c
}

// TestFlagMistakesSuggest: a misspelt flag gets the nearest one, written with --.
func TestFlagMistakesSuggest(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"chat", "--sesion", "x"}, "did you mean --session?"},
		{[]string{"chat", "-sesion", "x"}, "did you mean --session?"},
		{[]string{"memory", "list", "--usr", "x"}, "did you mean --user?"},
		{[]string{"knowledge", "search", "--limt", "3", "x"}, "did you mean --limit?"},
		{[]string{"memory", "forget", "--all", "m1"}, "unknown flag --all"},
		{[]string{"--confg", "x", "serve"}, "did you mean --config?"},
	} {
		e, _, errb := testEnv(map[string]string{}, tt.args...)
		if code := run(context.Background(), e); code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("echogate %v = exit %d, stderr %q; want 2 and %q", tt.args, code, errb.String(), tt.want)
		}
	}
}

// TestVersionFlags: --version, -v and version print the version.
func TestVersionFlags(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}, {"-version"}} {
		e, out, errb := testEnv(map[string]string{}, args...)
		if code := run(context.Background(), e); code != 0 || !strings.HasPrefix(out.String(), "echogate ") {
			t.Errorf("echogate %v = exit %d, stdout %q, stderr %q; want 0 and the version", args, code, out.String(), errb.String())
		}
	}
}
