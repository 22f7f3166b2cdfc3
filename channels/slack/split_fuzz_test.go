package slack

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSplitText checks splitText on any bytes: no panic, every piece within max characters, no
// blank piece.
func FuzzSplitText(f *testing.F) {
	for _, s := range []string{
		"", "hello", strings.Repeat("word ", 400) + "ab\x94",
		"```\n" + strings.Repeat("x := 1\n", 600) + "```\n",
		strings.Repeat("é", 5000), strings.Repeat("\n", 4000), "\xff\xfe\xfd",
	} {
		f.Add(s, maxSectionChars)
	}
	f.Fuzz(func(t *testing.T, text string, m int) {
		if m < 0 {
			m = -(m + 1)
		}
		m %= 5000
		pieces := splitText(text, m)
		limit := max(m, minSplit)
		for i, p := range pieces {
			if n := utf8.RuneCountInString(p); n > limit {
				t.Fatalf("splitText(%q, %d)[%d] is %d characters, want <= %d", text, m, i, n, limit)
			}
			if strings.TrimSpace(p) == "" {
				t.Fatalf("splitText(%q, %d)[%d] is blank", text, m, i)
			}
		}
	})
}

// FuzzToMrkdwn checks the Markdown conversion on any bytes: no panic, valid UTF-8 out of valid
// UTF-8 in, and no raw '<' that Slack would read as markup outside the links it builds.
func FuzzToMrkdwn(f *testing.F) {
	for _, s := range []string{
		"", "**bold** _it_ ~~gone~~", "[a](https://x.example/y) <https://z.example>",
		"# Title\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |", "```go\nfmt.Println(\"<x>\")\n```",
		"a & b < c > d", strings.Repeat("*", 300), "[\x00](\x00)", "ab\x94",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := toMrkdwn(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Fatalf("toMrkdwn(%q) = %q, invalid UTF-8", md, out)
		}
		_ = splitText(out, maxMessageChars)
	})
}
