package knowledge

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/echogate/echogate/internal/memrec"
)

// block is one paragraph (or fenced code block) of the text, with the section it is in.
type block struct {
	heading    string // "Install › Linux"
	start, end int    // byte offsets in the text
}

// blocks splits text into paragraphs, tracking Markdown headings ("# …" lines outside code
// fences) when headings is set. A heading line starts a new section and is not a block itself.
func blocks(text string, headings bool) (out []block, title string) {
	var (
		path    []string // heading per level
		start   = -1
		inFence bool
	)
	heading := func() string { return strings.Join(nonEmpty(path), " › ") }
	flush := func(end int) {
		if start >= 0 && strings.TrimSpace(text[start:end]) != "" {
			out = append(out, block{heading: heading(), start: start, end: end})
		}
		start = -1
	}
	pos := 0
	for pos < len(text) {
		nl := strings.IndexByte(text[pos:], '\n')
		lineEnd := len(text)
		if nl >= 0 {
			lineEnd = pos + nl
		}
		line := text[pos:lineEnd]
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			if start < 0 {
				start = pos
			}
			inFence = !inFence
		case inFence:
		case headings && isHeading(trimmed):
			flush(pos)
			level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
			h := strings.TrimSpace(strings.Trim(strings.TrimSpace(trimmed[level:]), "#"))
			for len(path) < level {
				path = append(path, "")
			}
			path = append(path[:level-1], h)
			if title == "" && level == 1 {
				title = h
			}
		case trimmed == "":
			flush(pos)
		default:
			if start < 0 {
				start = pos
			}
		}
		pos = lineEnd + 1
	}
	flush(len(text))
	return out, title
}

func isHeading(line string) bool {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	return n >= 1 && n <= 6 && len(line) > n && line[n] == ' '
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// chunkText packs paragraphs into chunks of at most size bytes that never cross a section
// boundary; consecutive chunks of one section overlap by about overlap bytes (cut at a word
// boundary). A paragraph longer than size is split at word boundaries.
func chunkText(text string, bs []block, size, overlap int) []memrec.Chunk {
	var out []memrec.Chunk
	emit := func(heading string, start, end int) {
		start, end = trimSpan(text, start, end)
		if end > start {
			out = append(out, memrec.Chunk{Seq: len(out), Heading: heading, Text: text[start:end], Start: start, End: end})
		}
	}
	curStart, curEnd, curHeading := -1, -1, ""
	flush := func() {
		if curStart >= 0 {
			emit(curHeading, curStart, curEnd)
		}
		curStart = -1
	}
	for _, b := range bs {
		if curStart >= 0 && b.heading != curHeading {
			flush()
		}
		// Oversized paragraph: split it.
		if b.end-b.start > size {
			flush()
			s := b.start
			for s < b.end {
				e := min(s+size, b.end)
				if e < b.end {
					e = cutAtSpace(text, s, e)
					for e > s+1 && e < len(text) && !utf8.RuneStart(text[e]) {
						e-- // never cut a character in two
					}
				}
				emit(b.heading, s, e)
				if e >= b.end {
					break
				}
				s = max(overlapStart(text, s, e, overlap), s+1)
			}
			continue
		}
		if curStart >= 0 && b.end-curStart > size {
			prevEnd := curEnd
			flush()
			if o := overlapStart(text, max(b.start-size, 0), prevEnd, overlap); o < b.start && b.end-o <= size {
				curStart = o
			}
		}
		if curStart < 0 {
			curStart = b.start
		}
		curEnd, curHeading = b.end, b.heading
	}
	flush()
	return out
}

// cutAtSpace moves end back to the last whitespace after start (if any in the second half).
func cutAtSpace(text string, start, end int) int {
	for i := end; i > start+(end-start)/2; i-- {
		if unicode.IsSpace(rune(text[i-1])) {
			return i
		}
	}
	return end
}

// overlapStart returns where the next chunk starts so that it repeats about n bytes before end,
// beginning at a word.
func overlapStart(text string, start, end, n int) int {
	if n <= 0 {
		return end
	}
	s := max(end-n, start)
	for s < end && !unicode.IsSpace(rune(text[s])) && s > start {
		s++
	}
	for s < end && unicode.IsSpace(rune(text[s])) {
		s++
	}
	return s
}

func trimSpan(text string, start, end int) (int, int) {
	for start < end && unicode.IsSpace(rune(text[start])) {
		start++
	}
	for end > start && unicode.IsSpace(rune(text[end-1])) {
		end--
	}
	return start, end
}
