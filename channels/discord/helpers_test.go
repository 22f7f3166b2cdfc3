package discord

import "strings"

// unsplit joins split messages back, removing the fences splitMessage added at the boundaries.
func unsplit(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			prev := parts[i-1]
			// A block closed at the end of prev and reopened at the start of p.
			if strings.HasSuffix(prev, "\n```") && strings.HasPrefix(p, "```") && strings.Count(prev, "```")%2 == 0 && openAtEnd(parts[:i]) {
				s := b.String()
				b.Reset()
				b.WriteString(strings.TrimSuffix(s, "\n```"))
				if nl := strings.IndexByte(p, '\n'); nl >= 0 {
					p = p[nl+1:]
				}
			}
			b.WriteString("\n")
		}
		b.WriteString(p)
	}
	return b.String()
}

// openAtEnd reports whether the original text was inside a code block at the end of parts: the
// last part's closing fence was added by the splitter (its own fences, without it, are odd).
func openAtEnd(parts []string) bool {
	last := parts[len(parts)-1]
	return strings.Count(strings.TrimSuffix(last, "\n```"), "```")%2 == 1
}

// normalize drops whitespace differences at split points.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// squash drops all whitespace, for texts split inside words.
func squash(s string) string { return strings.Join(strings.Fields(s), "") }
