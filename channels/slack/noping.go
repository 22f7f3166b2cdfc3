package slack

import (
	"strings"
	"unicode/utf8"
)

// Outbound text cannot ping. Slack reads '<' as the start of its control syntax: <!channel>,
// <!here>, <!everyone>, <@U…>, <#C…>, <!subteam^…>, <!date^…>. Text the model (or a tool, or a
// quoted message) wrote reaches Slack only through the functions below, which escape it by
// Slack's rules (&amp; &lt; &gt;) so that Slack shows it as written and notifies nobody:
//
//   - toMrkdwn (posts, chat.update, split messages, approval prompts, ephemeral answers) escapes
//     every '<' and makes a Markdown link a Slack link only when its target is a URL with a
//     scheme; [x](!channel), [x](@U…), [x](#C…) are shown as "x (!channel)". defuse checks the
//     result once more before it is sent.
//   - safeMarkdown (native streaming's markdown_text, task card and plan titles, the thread
//     status) escapes '&' and '<' and percent-encodes the '!', '@' or '#' that starts a link
//     destination, so Slack's Markdown translation cannot make a mention of it.
//   - A thread's title, taken from the user's first message (which the channel unescaped for
//     the model), is escaped again with slackEscape.
//
// The gateway itself puts no mention into what it sends; there is no allow-list of mentions
// that would let text of the right shape through.

// reserved replaces the bytes toMrkdwn uses as placeholders (NUL marks a held link, \x01 a
// bold marker) so that model text cannot forge them.
var reserved = strings.NewReplacer("\x00", "\uFFFD", "\x01", "\uFFFD")

// linkable reports whether a Markdown link target may become a Slack link <target|text>: it
// must be a URL with a scheme (https:, mailto:, …). Slack's control sequences start with '!',
// '@' or '#', so none of them is linkable; relative paths mean nothing in Slack either.
func linkable(target string) bool {
	n := schemeLen(target)
	return n > 0 && n < len(target)
}

// schemeLen returns the length of s's URL scheme with its ':' ("https:" → 6), or 0.
func schemeLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// defuse escapes every '<' of mrkdwn that does not open a link to a URL with a scheme. toMrkdwn
// makes no other; this is the last check before a text leaves, so that no later change to the
// converter can let a control sequence through.
func defuse(mrkdwn string) string {
	if !strings.Contains(mrkdwn, "<") {
		return mrkdwn
	}
	var b strings.Builder
	b.Grow(len(mrkdwn) + 16)
	for {
		i := strings.IndexByte(mrkdwn, '<')
		if i < 0 {
			b.WriteString(mrkdwn)
			return b.String()
		}
		b.WriteString(mrkdwn[:i])
		if schemeLen(mrkdwn[i+1:]) > 0 {
			b.WriteByte('<')
		} else {
			b.WriteString("&lt;")
		}
		mrkdwn = mrkdwn[i+1:]
	}
}

// safeMarkdown escapes model-written Markdown for a field Slack renders as Markdown or plain
// text (markdown_text, task and plan titles, statuses): '&' becomes &amp; and '<' &lt;, and a
// '!', '@' or '#' that starts a link destination ("](" or "]:" before it, past spaces, '<' and
// '\') is percent-encoded. '>' stays, so quotes keep working; with no '<' it closes nothing.
//
// It escapes md[from:] and returns the escaped text and the offset in md where it stopped: at
// the end, or before the rune whose escape would take the output past limit bytes (limit < 0:
// no limit). Each rune's escape depends only on md up to it, so consecutive pieces concatenate
// to the escape of the whole: a control sequence cut across pieces is escaped all the same.
func safeMarkdown(md string, from, limit int) (string, int) {
	var b strings.Builder
	i := from
	for i < len(md) {
		_, size := utf8.DecodeRuneInString(md[i:])
		rep := md[i : i+size]
		switch md[i] {
		case '&':
			rep = "&amp;"
		case '<':
			rep = "&lt;"
		case '!':
			if linkDestinationAt(md, i) {
				rep = "%21"
			}
		case '@':
			if linkDestinationAt(md, i) {
				rep = "%40"
			}
		case '#':
			if linkDestinationAt(md, i) {
				rep = "%23"
			}
		}
		if limit >= 0 && b.Len()+len(rep) > limit {
			break
		}
		b.WriteString(rep)
		i += size
	}
	return b.String(), i
}

// safeText is safeMarkdown over the whole of s.
func safeText(s string) string {
	out, _ := safeMarkdown(s, 0, -1)
	return out
}

// linkDestinationAt reports whether md[i] starts a Markdown link destination: what precedes it,
// past spaces, line ends, '<' and '\', is "](" (inline link) or "]:" (reference definition).
func linkDestinationAt(md string, i int) bool {
	j := i
	for j > 0 && strings.IndexByte(" \t\r\n<\\", md[j-1]) >= 0 {
		j--
	}
	return j >= 2 && md[j-2] == ']' && (md[j-1] == '(' || md[j-1] == ':')
}
