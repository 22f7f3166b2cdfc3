package slack

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/echogate/echogate/internal/lazyre"
)

// Slack limits (https://docs.slack.dev/reference/methods/chat.postMessage): text is truncated
// past 40,000 characters, a section block's text holds at most 3,000, a message at most 50
// blocks, and a streamed markdown_text chunk at most 12,000.
const (
	maxMessageChars = 39000 // below 40,000 to leave room for fence repairs
	maxSectionChars = 3000
	maxBlocks       = 50
	maxStreamChunk  = 12000
	// maxStreamMessage caps the text streamed natively into one message; the rest of a longer
	// answer is posted as follow-up messages when the stream finishes.
	maxStreamMessage = 36000
)

var (
	reFence     = lazyre.New("^\\s*```")
	reHeading   = lazyre.New(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	reBullet    = lazyre.New(`^(\s*)[-*+]\s+`)
	reRule      = lazyre.New(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`)
	reLink      = lazyre.New(`!?\[([^\]\n]*)\]\((\S+?)(?:\s+"[^"]*")?\)`)
	reAutolink  = lazyre.New(`<((?:https?|mailto):[^>\s]+)>`)
	reBold      = lazyre.New(`\*\*(\S(?:.*?\S)?)\*\*|__(\S(?:.*?\S)?)__`)
	reItalic    = lazyre.New(`(^|[^*\w])\*(\S(?:[^*]*?\S)?)\*`)
	reStrike    = lazyre.New(`~~(\S(?:.*?\S)?)~~`)
	reTableSep  = lazyre.New(`^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$`)
	reTableLine = lazyre.New(`^\s*\|.*\|\s*$`)
)

// slackEscape escapes the three characters Slack reserves for its markup.
func slackEscape(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackUnescape reverses slackEscape for inbound text.
func slackUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// toMrkdwn converts the Markdown a model writes into Slack mrkdwn: bold, italics, strikethrough,
// links, headings, bullets, fenced code (language tags dropped), tables (shown as code) and the
// escaping of &, < and >. Code is left verbatim apart from escaping. The only '<' in its output
// opens a link to a URL with a scheme (see linkable): whatever control sequence the model wrote
// (<!channel>, <@U…>, <#C…>, <!subteam^…>) is shown as text and pings nobody.
func toMrkdwn(md string) string {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	md = reserved.Replace(md)
	lines := strings.Split(md, "\n")
	var b strings.Builder
	b.Grow(len(md) + len(md)/16)
	inCode := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if i > 0 {
			b.WriteByte('\n')
		}
		if reFence.MatchString(line) {
			inCode = !inCode
			b.WriteString("```")
			continue
		}
		if inCode {
			b.WriteString(slackEscape(line))
			continue
		}
		// A Markdown table: a header line followed by a separator line. Shown as code.
		if reTableLine.MatchString(line) && i+1 < len(lines) && reTableSep.MatchString(lines[i+1]) {
			b.WriteString("```\n")
			j := i
			for ; j < len(lines) && reTableLine.MatchString(lines[j]) || (j == i+1); j++ {
				if j > i {
					b.WriteByte('\n')
				}
				b.WriteString(slackEscape(lines[j]))
			}
			b.WriteString("\n```")
			i = j - 1
			continue
		}
		b.WriteString(convertLine(line))
	}
	return b.String()
}

func convertLine(line string) string {
	if strings.TrimSpace(line) == "" {
		return line
	}
	if reRule.MatchString(line) {
		return "──────────"
	}
	if m := reHeading.FindStringSubmatch(line); m != nil {
		inner := strings.NewReplacer("**", "", "__", "").Replace(m[1])
		if inner == "" {
			return ""
		}
		return "*" + convertInline(inner) + "*"
	}
	prefix := ""
	if m := reBullet.FindStringSubmatch(line); m != nil {
		prefix = m[1] + "• "
		line = line[len(m[0]):]
	}
	// Blockquote markers must stay a literal ">" at the start of the line.
	quote := ""
	for {
		t := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(t, ">") {
			break
		}
		quote += ">"
		line = strings.TrimPrefix(t[1:], " ")
	}
	if quote != "" {
		quote += " "
	}
	return prefix + quote + convertInline(line)
}

// convertInline converts one line outside code blocks; `code spans` are kept verbatim.
func convertInline(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			b.WriteString(convertText(s))
			return b.String()
		}
		j := strings.IndexByte(s[i+1:], '`')
		if j < 0 {
			b.WriteString(convertText(s))
			return b.String()
		}
		b.WriteString(convertText(s[:i]))
		b.WriteString("`" + slackEscape(s[i+1:i+1+j]) + "`")
		s = s[i+2+j:]
	}
}

func convertText(s string) string {
	if s == "" {
		return s
	}
	// Links become placeholders first so escaping and emphasis rules leave them alone.
	var links []string
	hold := func(v string) string {
		links = append(links, v)
		return "\x00" + strconv.Itoa(len(links)-1) + "\x00"
	}
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		sm := reLink.FindStringSubmatch(m)
		text, u := sm[1], sm[2]
		if !linkable(u) { // a ping (!channel, @U…, #C…) or no URL: shown as text
			if text == "" || text == u {
				return hold(slackEscape(u))
			}
			return hold(slackEscape(text + " (" + u + ")"))
		}
		if text == "" || text == u {
			return hold("<" + slackEscape(u) + ">")
		}
		return hold("<" + slackEscape(u) + "|" + slackEscape(strings.ReplaceAll(text, "|", "/")) + ">")
	})
	s = reAutolink.ReplaceAllStringFunc(s, func(m string) string {
		return hold("<" + slackEscape(m[1:len(m)-1]) + ">")
	})
	s = slackEscape(s)
	s = reBold.ReplaceAllStringFunc(s, func(m string) string {
		sm := reBold.FindStringSubmatch(m)
		inner := sm[1] + sm[2]
		return "\x01" + inner + "\x01"
	})
	s = reItalic.ReplaceAllString(s, "${1}_${2}_")
	s = strings.ReplaceAll(s, "\x01", "*")
	s = reStrike.ReplaceAllString(s, "~${1}~")
	if len(links) > 0 {
		parts := strings.Split(s, "\x00")
		for i := 1; i < len(parts); i += 2 {
			if n, err := strconv.Atoi(parts[i]); err == nil && n < len(links) {
				parts[i] = links[n]
			}
		}
		s = strings.Join(parts, "")
	}
	return s
}

// splitText splits s into pieces of at most max characters, breaking at line boundaries (a
// single over-long line at a space, else anywhere), preferring blank lines, and closing and
// reopening a ``` code block that a break falls into. Empty input gives no pieces.
func splitText(s string, max int) []string {
	max = maxInt(max, minSplit)
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if utf8.RuneCountInString(s) <= max {
		return []string{s}
	}
	const fence = "```"
	budget := max - len(fence) - 1 // room to close a code block
	var (
		out     []string
		cur     []string
		curLen  int
		inCode  bool // state at the end of cur
		startIn bool // cur began inside a code block
	)
	flush := func() {
		if len(cur) == 0 {
			return
		}
		text := strings.Join(cur, "\n")
		if startIn {
			text = fence + "\n" + text
		}
		if inCode {
			text += "\n" + fence
		}
		if strings.TrimSpace(text) != "" {
			out = append(out, text)
		}
		cur, curLen, startIn = nil, 0, inCode
	}
	add := func(line string) {
		cur = append(cur, line)
		curLen += utf8.RuneCountInString(line) + 1
		if reFence.MatchString(line) {
			inCode = !inCode
		}
	}
	extra := func() int { // the reopened fence at the start of a piece that began in code
		if startIn {
			return len(fence) + 1
		}
		return 0
	}
	for _, line := range strings.Split(s, "\n") {
		n := utf8.RuneCountInString(line)
		if curLen+n+extra() > budget && len(cur) > 0 {
			// Prefer breaking at the last blank line of the second half of the piece.
			if k := lastBlank(cur); !inCode && !startIn && k > len(cur)/2 {
				rest := append([]string(nil), cur[k+1:]...)
				cur = cur[:k]
				flush()
				for _, r := range rest {
					add(r)
				}
			}
			if curLen+n+extra() > budget && len(cur) > 0 {
				flush()
			}
		}
		for longerThan(line, budget-extra()-1) {
			if len(cur) > 0 {
				flush()
			}
			head, tail := cutLine(line, budget-extra()-1)
			add(head)
			flush()
			line = tail
		}
		add(line)
	}
	flush()
	return out
}

// longerThan reports whether s has more than k runes, reading at most k+1 of them.
func longerThan(s string, k int) bool {
	n := 0
	for range s {
		if n++; n > k {
			return true
		}
	}
	return false
}

// minSplit is the smallest piece splitText makes: room for a closing fence and some text.
const minSplit = 16

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func lastBlank(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			return i
		}
	}
	return -1
}

// cutLine cuts line after at most max characters, at the last space when there is one in the
// second half.
func cutLine(line string, max int) (string, string) {
	if max < 1 {
		max = 1
	}
	idx, n := len(line), 0
	for i := range line {
		if n == max {
			idx = i
			break
		}
		n++
	}
	head := line[:idx]
	if sp := strings.LastIndexByte(head, ' '); sp > len(head)/2 {
		return line[:sp], line[sp+1:]
	}
	return head, line[idx:]
}
