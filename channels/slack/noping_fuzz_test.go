package slack

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// FuzzOutboundTextCannotPing checks every rendering of model text for Slack on any bytes: no
// '<!', '<@' or '<#' survives in what is sent. toMrkdwn (without the defuse check) may only
// open '<' for a link to a URL with a scheme; render's messages and blocks (posts, chat.update,
// split messages, approval prompts, ephemeral answers) carry no control sequence; safeMarkdown
// (native stream, task cards, plan, status) leaves no '<' and no link destination starting
// with '!', '@' or '#', and its pieces, cut at any limit, concatenate to the whole.
func FuzzOutboundTextCannotPing(f *testing.F) {
	for _, s := range []string{
		modelPings, "", "<!channel>", "[x](!here)", "[x](  \n<\\@U1>)", "[r]: #C1", "<<!channel>>",
		"[a](https://x.example|<!here>)", "<https://x.example|<!here>>", "<mailto:<!channel>>",
		"![i](@U1 \"t\")", "`[x](!here)`", "```\n[x](!here)\n```", "&lt;!channel&gt;", "[x](&#33;here)",
		"\x00<!channel>\x00", "[\x00](\x00)", "**<!here>**", "# <@U1>", "> <#C1>", "|<!here>|\n|---|",
	} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, md string, limit int) {
		if out := toMrkdwn(md); defuse(out) != out {
			t.Fatalf("toMrkdwn(%q) = %q, opens '<' other than for a link to a URL", md, out)
		}
		for i, m := range render(md) {
			if p := pingIn(m.text, false); p != "" {
				t.Fatalf("render(%q)[%d].text carries %q", md, i, p)
			}
			for _, b := range m.blocks {
				if sec, ok := b.(*slack.SectionBlock); ok && sec.Text != nil {
					if p := pingIn(sec.Text.Text, false); p != "" {
						t.Fatalf("render(%q)[%d] block carries %q", md, i, p)
					}
				}
			}
		}
		whole, end := safeMarkdown(md, 0, -1)
		if end != len(md) {
			t.Fatalf("safeMarkdown(%q, 0, -1) stopped at %d, want %d", md, end, len(md))
		}
		if p := pingIn(whole, true); p != "" || strings.Contains(whole, "<") {
			t.Fatalf("safeMarkdown(%q) = %q, carries %q or a '<'", md, whole, p)
		}
		limit = 5 + (limit%64+64)%64 // the longest escape of one rune is 5 bytes
		var b strings.Builder
		for at := 0; at < len(md); {
			piece, next := safeMarkdown(md, at, limit)
			if next <= at || len(piece) > limit {
				t.Fatalf("safeMarkdown(%q, %d, %d) = %q, %d: no progress or over the limit", md, at, limit, piece, next)
			}
			b.WriteString(piece)
			at = next
		}
		if b.String() != whole {
			t.Fatalf("safeMarkdown(%q) in pieces of %d = %q, want %q", md, limit, b.String(), whole)
		}
	})
}
