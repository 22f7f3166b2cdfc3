package console

import "testing"

func TestTerminalText(t *testing.T) {
	for name, tt := range map[string]struct {
		in   string
		tty  bool
		want string
	}{
		"bold, no terminal":      {"**Your usage**\n- Today: $0", false, "Your usage\n  • Today: $0"},
		"bold on a terminal":     {"**Your usage**", true, "\x1b[1mYour usage\x1b[22m"},
		"slack bullets and code": {"• `usage`: your spend", false, "  • usage: your spend"},
		"fences dropped":         {"```\nx := 1\n```", false, "x := 1"},
		"plain text kept":        {"It is 3 * 4 = 12.", false, "It is 3 * 4 = 12."},
	} {
		if got := terminalText(tt.in, tt.tty); got != tt.want {
			t.Errorf("%s: terminalText(%q) = %q, want %q", name, tt.in, got, tt.want)
		}
	}
}
