package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"
)

// The scanner's JSON primitives, strict: anything they do not accept sends the chunk to
// json.Unmarshal (see decodeChunk).

// chunkScanner reads one chunk; every method returns false on anything it does not handle.
type chunkScanner struct {
	b    []byte
	i    int
	prev *goopenai.ChatCompletionStreamResponse
}

func (s *chunkScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte (0 at the end).
func (s *chunkScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *chunkScanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// raw returns a string literal's contents (no quotes) and whether they need unescaping or
// UTF-8 repair.
func (s *chunkScanner) raw() (lit []byte, slow, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	start := s.i
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start:s.i], slow, true
		case c == '\\':
			slow = true
			s.i++ // the escaped byte; \uXXXX's digits are ordinary bytes
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			slow = true
		}
	}
	return nil, false, false
}

// str reads a string or null into *dst (null leaves it, as json.Unmarshal does); same is a
// value to reuse when the literal spells it.
func (s *chunkScanner) str(dst *string, same string) bool {
	if s.null() {
		return true
	}
	lit, slow, ok := s.raw()
	if !ok {
		return false
	}
	body := lit[1 : len(lit)-1]
	switch {
	case slow && (hasByte(body, '\\') || !utf8.Valid(body)):
		return json.Unmarshal(lit, dst) == nil
	case string(body) == same:
		*dst = same
	default:
		*dst = string(body)
	}
	return true
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// integer reads an integer (no fraction or exponent, at most 18 digits) or null into *dst.
func (s *chunkScanner) integer(dst *int64) bool {
	if s.null() {
		return true
	}
	neg := s.peek() == '-'
	if neg {
		s.i++
	}
	start, n := s.i, int64(0)
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

func (s *chunkScanner) int(dst *int) bool {
	v := int64(*dst)
	if !s.integer(&v) {
		return false
	}
	*dst = int(v)
	return true
}

// object reads an object, calling field for each key with the scanner at its value.
func (s *chunkScanner) object(field func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		lit, slow, ok := s.raw()
		if !ok || slow || s.peek() != ':' {
			return false
		}
		s.i++
		if !field(lit[1 : len(lit)-1]) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array reads a JSON array, calling elem for each element (with the scanner at its start);
// false when the input is not an array or elem refuses an element.
func (s *chunkScanner) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// unknown skips the value of a key the struct has no field for (OpenAI's service_tier and
// obfuscation, a proxy's extras), as json.Unmarshal ignores it.
func (s *chunkScanner) unknown(key []byte, fields []string) bool {
	for _, f := range fields {
		if bytes.EqualFold(key, []byte(f)) {
			return false
		}
	}
	return s.skip(0)
}

// skip passes over one JSON value, accepting only valid JSON.
func (s *chunkScanner) skip(depth int) bool {
	if depth > 32 {
		return false
	}
	switch c := s.peek(); {
	case c == '"':
		lit, slow, ok := s.raw()
		return ok && (!slow || json.Valid(lit))
	case c == '{':
		return s.object(func([]byte) bool { return s.skip(depth + 1) })
	case c == '[':
		return s.array(func() bool { return s.skip(depth + 1) })
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	for _, w := range []string{"null", "true", "false"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
			s.i += len(w)
			return true
		}
	}
	return false
}

// number passes over a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *chunkScanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	start := s.i
	if n := digits(); n == 0 || (n > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
