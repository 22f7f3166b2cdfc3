package discord

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzSplitMessage checks splitMessage on any bytes: it never panics, every message fits the
// limit, none is blank, and no visible character is lost or invented outside code fences.
func FuzzSplitMessage(f *testing.F) {
	for _, s := range []string{
		"", "hello", strings.Repeat("word ", 400) + "ab\x94",
		"```go\n" + strings.Repeat("x := 1\n", 400) + "```\n",
		strings.Repeat("é", 3000), strings.Repeat("😀", 1500), "\xff\xfe\xfd",
	} {
		f.Add(s, 2000)
	}
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = 16 + abs(limit)%4000
		parts := splitMessage(text, limit)
		for i, p := range parts {
			if n := textLen(p); n > limit {
				t.Fatalf("splitMessage(%q, %d)[%d] is %d long, want <= %d", text, limit, i, n, limit)
			}
			if strings.TrimSpace(p) == "" {
				t.Fatalf("splitMessage(%q, %d)[%d] is blank", text, limit, i)
			}
		}
		if strings.Contains(text, "`") {
			return // fences are closed and reopened: the text changes by design
		}
		if got, want := visible(strings.Join(parts, "")), visible(text); got != want {
			t.Fatalf("splitMessage(%q, %d) changed the text: got %q, want %q", text, limit, got, want)
		}
	})
}

func TestSplitMessageInvalidUTF8(t *testing.T) {
	text := strings.Repeat("word ", 400) + "ab\x94"
	parts := splitMessage(text, 2000)
	if got := strings.Join(parts, " "); visible(got) != visible(text) {
		t.Fatalf("splitMessage(%q) lost bytes: got %q", text, got)
	}
}

func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}
