package openai

import (
	"encoding/json"

	goopenai "github.com/sashabaranov/go-openai"
)

// decodeChunk decodes one stream chunk into c exactly as json.Unmarshal into a zero
// ChatCompletionStreamResponse does; c is zero but for an empty Choices slice whose array is
// reused. Chunks of the common shape (text deltas, the finish reason, usage) are read by a small
// scanner without reflection (chunkscan.go), reusing prev's strings where the chunk repeats them
// (id, object, model, fingerprint); anything else — tool-call fragments, logprobs, content-filter
// results, a key differing from a field only in case, a number with a fraction, a malformed
// document — goes to json.Unmarshal, so the result and every error are json.Unmarshal's.
func decodeChunk(data []byte, c, prev *goopenai.ChatCompletionStreamResponse) error {
	s := chunkScanner{b: data, prev: prev}
	if s.chunk(c) {
		return nil
	}
	*c = goopenai.ChatCompletionStreamResponse{}
	return json.Unmarshal(data, c)
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
	if c.Choices == nil {
		c.Choices = make([]goopenai.ChatCompletionStreamChoice, 0, 1) // n is 1
	}
	return s.array(func() bool {
		c.Choices = append(c.Choices, goopenai.ChatCompletionStreamChoice{})
		return s.choice(&c.Choices[len(c.Choices)-1])
	})
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
			seenCalls := false
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
					if seenCalls {
						return false // a repeated array would be decoded over the first; leave it to json
					}
					seenCalls = true
					return s.toolCalls(&d.ToolCalls)
				case "function_call":
					return s.null() && d.FunctionCall == nil
				}
				return s.unknown(key, deltaFields)
			})
		}
		return s.unknown(key, choiceFields)
	})
}

// toolCalls reads a delta's tool_calls: null, or an array of call objects (a null element is
// left to json.Unmarshal).
func (s *chunkScanner) toolCalls(dst *[]goopenai.ToolCall) bool {
	if s.null() {
		*dst = nil
		return true
	}
	calls := make([]goopenai.ToolCall, 0, 1)
	ok := s.array(func() bool {
		calls = append(calls, goopenai.ToolCall{})
		return !s.null() && s.toolCall(&calls[len(calls)-1])
	})
	if ok {
		*dst = calls
	}
	return ok
}

func (s *chunkScanner) toolCall(tc *goopenai.ToolCall) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			if s.null() {
				tc.Index = nil
				return true
			}
			if tc.Index == nil {
				tc.Index = new(int)
			}
			return s.int(tc.Index)
		case "id":
			return s.str(&tc.ID, "")
		case "type":
			return s.str((*string)(&tc.Type), string(goopenai.ToolTypeFunction))
		case "function":
			if s.null() {
				return true // json leaves a struct as it is
			}
			f := &tc.Function
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "name":
					return s.str(&f.Name, "")
				case "arguments":
					return s.str(&f.Arguments, "")
				}
				return s.unknown(key, functionFields)
			})
		}
		return s.unknown(key, toolCallFields)
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
	toolCallFields         = []string{"index", "id", "type", "function"}
	functionFields         = []string{"name", "arguments"}
	usageFields            = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	promptDetailFields     = []string{"audio_tokens", "cached_tokens"}
	completionDetailFields = []string{"audio_tokens", "reasoning_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"}
)
