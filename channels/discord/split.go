package discord

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// textLen is the length Discord's limit is measured in, counted conservatively as UTF-16 code
// units (a character outside the Basic Multilingual Plane, such as most emoji, counts 2).
func textLen(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// fenceLine reports whether line (without its newline) is a Markdown code fence: up to three
// spaces, then three or more backticks. It returns the fence as written, info string included.
func fenceLine(line string) (string, bool) {
	t := strings.TrimRight(line, " \t\r\n")
	trimmed := strings.TrimLeft(t, " ")
	if len(t)-len(trimmed) > 3 || !strings.HasPrefix(trimmed, "```") {
		return "", false
	}
	return trimmed, true
}

// splitMessage splits text into messages of at most limit characters (textLen). It splits at line
// boundaries, preferring to start a code block in a new message rather than splitting it; a code
// block that must be split is closed at the end of one message and reopened (with its language)
// at the start of the next. A single line longer than a message is split at a space, or anywhere
// when it has none. Whitespace-only messages are never produced; an all-whitespace text yields
// nil.
func splitMessage(text string, limit int) []string {
	if limit < 16 {
		limit = 16
	}
	text = strings.Trim(text, "\n")
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if textLen(text) <= limit {
		return []string{text}
	}
	const closeFence = "\n```"
	s := splitter{limit: limit, fenceStart: -1}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		f, isFence := fenceLine(line)
		after := s.fence
		switch {
		case isFence && s.fence == "":
			after = f
			// A code block starting in the second half of a full message moves to the next
			// message, so short blocks stay whole.
			if s.hasContent() && s.curLen > limit/2 {
				s.flush()
			}
		case isFence && s.fence != "" && strings.Trim(f, "`") == "":
			after = ""
		}
		reserve := 0
		if after != "" {
			reserve = len(closeFence)
		}
		if s.curLen+textLen(line)+reserve > limit && s.hasContent() {
			s.flush()
		}
		if s.curLen+textLen(line)+reserve <= limit {
			if isFence && s.fence == "" {
				s.fenceStart = s.cur.Len()
			}
			s.add(line)
			s.fence = after
			continue
		}
		// The line alone does not fit: cut it into pieces.
		rest := line
		for rest != "" {
			room := limit - s.curLen - reserve
			if room < 8 && s.hasContent() {
				s.flush()
				continue
			}
			piece := cutAt(rest, room)
			s.add(piece)
			rest = rest[len(piece):]
			if rest != "" {
				s.flush()
			}
		}
		s.fence = after
	}
	s.flush()
	return s.out
}

type splitter struct {
	limit  int
	out    []string
	cur    strings.Builder
	curLen int
	head   int    // length of the reopened fence header at the start of cur
	fence  string // the open fence ("```go"), empty outside code blocks
	// fenceStart is the byte offset in cur of the fence line that opened the current block in
	// this message, or -1.
	fenceStart int
}

func (s *splitter) hasContent() bool { return s.curLen > s.head }

func (s *splitter) add(t string) {
	s.cur.WriteString(t)
	s.curLen += textLen(t)
}

// flush emits the current message (closing an open code block) and starts the next one
// (reopening it).
func (s *splitter) flush() {
	if s.hasContent() {
		cur := s.cur.String()
		var msg string
		if s.fence != "" && s.fenceStart >= 0 && strings.TrimSpace(cur[s.fenceStart:]) == s.fence {
			// The block opened on the last line: move it whole to the next message rather
			// than leave an empty block here.
			msg = strings.TrimRight(cur[:s.fenceStart], "\n")
		} else {
			msg = strings.TrimRight(cur, "\n")
			if s.fence != "" {
				msg += "\n```"
			}
		}
		if strings.TrimSpace(msg) != "" {
			s.out = append(s.out, msg)
		}
	}
	s.cur.Reset()
	s.curLen, s.head, s.fenceStart = 0, 0, -1
	if s.fence != "" {
		s.add(s.fence + "\n")
		s.head = s.curLen
	}
}

// cutAt returns the longest prefix of line that fits room characters, ending after a space when
// one lies in the second half of it. It always returns at least one rune.
func cutAt(line string, room int) string {
	n, end, lastSpace := 0, 0, -1
	for i, r := range line {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > room {
			break
		}
		n += w
		// The width in bytes as written: an invalid byte decodes as U+FFFD but is one byte
		// long, so utf8.RuneLen(r) would overshoot it.
		_, size := utf8.DecodeRuneInString(line[i:])
		end = i + size
		if unicode.IsSpace(r) {
			lastSpace = end
		}
	}
	if end == 0 {
		_, size := utf8.DecodeRuneInString(line)
		return line[:size]
	}
	if end < len(line) && lastSpace > end/2 {
		return line[:lastSpace]
	}
	return line[:end]
}
