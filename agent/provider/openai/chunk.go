package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"
)

// decodeChunk decodes one stream chunk into c exactly as json.Unmarshal into a zero
// ChatCompletionStreamResponse does; c is zero but for an empty Choices slice whose array is
// reused. Chunks of the common shape (text deltas, the finish reason,
// usage) are read by a small scanner without reflection, reusing prev's strings where the chunk
// repeats them (id, object, model, fingerprint); anything else — tool-call fragments, logprobs,
// content-filter results, a key it does not know, a number with a fraction, a malformed
// document — goes to json.Unmarshal, so the result and every error are json.Unmarshal's.
func decodeChunk(data []byte, c, prev *goopenai.ChatCompletionStreamResponse) error {
	s := chunkScanner{b: data, prev: prev}
	if s.chunk(c) {
		return nil
	}
	*c = goopenai.ChatCompletionStreamResponse{}
	return json.Unmarshal(data, c)
}

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

// chunk reads the whole document into c.
func (s *chunkScanner) chunk(c *goopenai.ChatCompletionStreamResponse) bool {
	var p goopenai.ChatCompletionStreamResponse
	if s.prev != nil {
		p = *s.prev
	}
	var seenChoices, seenUsage bool
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.str(&c.ID, p.ID)
		case "object":
			return s.str(&c.Object, p.Object)
		case "model":
			return s.str(&c.Model, p.Model)
		case "system_fingerprint":
			return s.str(&c.SystemFingerprint, p.SystemFingerprint)
		case "created":
			return s.integer(&c.Created)
		case "choices":
			if seenChoices {
				return false // a repeated array would be decoded over the first; leave it to json
			}
			seenChoices = true
			return s.choices(c)
		case "usage":
			if seenUsage {
				return false
			}
			seenUsage = true
			return s.usage(c)
		}
		return s.unknown(key, chunkFields)
	})
	if !seenChoices {
		c.Choices = nil // as json.Unmarshal leaves it (the caller may have lent an array)
	}
	return ok && s.peek() == 0 && s.i == len(s.b)
}

func (s *chunkScanner) choices(c *goopenai.ChatCompletionStreamResponse) bool {
	if s.null() {
		c.Choices = nil
		return true
	}
	if s.peek() != '[' {
		return false
	}
	s.i++
	if c.Choices == nil {
		c.Choices = make([]goopenai.ChatCompletionStreamChoice, 0, 1) // n is 1
	}
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		c.Choices = append(c.Choices, goopenai.ChatCompletionStreamChoice{})
		if !s.choice(&c.Choices[len(c.Choices)-1]) {
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

func (s *chunkScanner) choice(ch *goopenai.ChatCompletionStreamChoice) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			return s.int(&ch.Index)
		case "finish_reason":
			return s.str((*string)(&ch.FinishReason), "")
		case "logprobs":
			return s.null() && ch.Logprobs == nil
		case "delta":
			if s.null() {
				return true
			}
			d := &ch.Delta
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "content":
					return s.str(&d.Content, "")
				case "role":
					return s.str(&d.Role, "assistant")
				case "refusal":
					return s.str(&d.Refusal, "")
				case "reasoning_content":
					return s.str(&d.ReasoningContent, "")
				case "tool_calls":
					return s.null() && d.ToolCalls == nil
				case "function_call":
					return s.null() && d.FunctionCall == nil
				}
				return s.unknown(key, deltaFields)
			})
		}
		return s.unknown(key, choiceFields)
	})
}

func (s *chunkScanner) usage(c *goopenai.ChatCompletionStreamResponse) bool {
	if s.null() {
		c.Usage = nil
		return true
	}
	u := &goopenai.Usage{}
	c.Usage = u
	var seenPrompt, seenCompletion bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return s.int(&u.PromptTokens)
		case "completion_tokens":
			return s.int(&u.CompletionTokens)
		case "total_tokens":
			return s.int(&u.TotalTokens)
		case "prompt_tokens_details":
			if seenPrompt {
				return false
			}
			seenPrompt = true
			if s.null() {
				return true
			}
			d := &goopenai.PromptTokensDetails{}
			u.PromptTokensDetails = d
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "audio_tokens":
					return s.int(&d.AudioTokens)
				case "cached_tokens":
					return s.int(&d.CachedTokens)
				}
				return s.unknown(key, promptDetailFields)
			})
		case "completion_tokens_details":
			if seenCompletion {
				return false
			}
			seenCompletion = true
			if s.null() {
				return true
			}
			d := &goopenai.CompletionTokensDetails{}
			u.CompletionTokensDetails = d
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "audio_tokens":
					return s.int(&d.AudioTokens)
				case "reasoning_tokens":
					return s.int(&d.ReasoningTokens)
				case "accepted_prediction_tokens":
					return s.int(&d.AcceptedPredictionTokens)
				case "rejected_prediction_tokens":
					return s.int(&d.RejectedPredictionTokens)
				}
				return s.unknown(key, completionDetailFields)
			})
		}
		return s.unknown(key, usageFields)
	})
}

// The JSON names of each struct's fields. json.Unmarshal matches keys case-insensitively, so a
// key that folds to one of them (but was not matched exactly) is left to it.
var (
	chunkFields            = []string{"id", "object", "created", "model", "choices", "system_fingerprint", "prompt_annotations", "prompt_filter_results", "usage"}
	choiceFields           = []string{"index", "delta", "logprobs", "finish_reason", "content_filter_results"}
	deltaFields            = []string{"content", "role", "function_call", "tool_calls", "refusal", "reasoning_content"}
	usageFields            = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	promptDetailFields     = []string{"audio_tokens", "cached_tokens"}
	completionDetailFields = []string{"audio_tokens", "reasoning_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"}
)

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
		s.i++
		if s.peek() == ']' {
			s.i++
			return true
		}
		for {
			if !s.skip(depth + 1) {
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
