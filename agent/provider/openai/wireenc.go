package openai

import (
	"math"
	"strconv"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate/internal/jsonenc"
)

// chatSize estimates the encoded size of creq (without its tools), so appendChat seldom grows
// its buffer.
func chatSize(creq *goopenai.ChatCompletionRequest) int {
	n := 160 + len(creq.Model)
	for i := range creq.Messages {
		m := &creq.Messages[i]
		n += 48 + len(m.Role) + len(m.Name) + len(m.ToolCallID) + len(m.Content) + len(m.Content)/8
		for _, pt := range m.MultiContent {
			n += 48 + len(pt.Text)
			if pt.ImageURL != nil {
				n += 32 + len(pt.ImageURL.URL)
			}
		}
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments) + len(tc.Function.Arguments)/4
		}
	}
	return n
}

// appendChat appends the chat body of creq: the wireRequest encoding, then `,"tools":` and
// tools (an encoded array) when tools is not empty.
func appendChat(b []byte, creq *goopenai.ChatCompletionRequest, cacheKey string, tools []byte) []byte {
	b = append(b, `{"model":`...)
	b = jsonenc.AppendString(b, creq.Model)
	b = append(b, `,"messages":[`...)
	for i := range creq.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, &creq.Messages[i])
	}
	b = append(b, ']')
	if creq.MaxTokens != 0 {
		b = strconv.AppendInt(append(b, `,"max_tokens":`...), int64(creq.MaxTokens), 10)
	}
	if creq.MaxCompletionTokens != 0 {
		b = strconv.AppendInt(append(b, `,"max_completion_tokens":`...), int64(creq.MaxCompletionTokens), 10)
	}
	if creq.Temperature != 0 {
		b = appendFloat32(append(b, `,"temperature":`...), creq.Temperature)
	}
	b = append(b, `,"stream":true`...)
	if so := creq.StreamOptions; so != nil {
		b = strconv.AppendBool(append(b, `,"stream_options":{"include_usage":`...), so.IncludeUsage)
		b = append(b, '}')
	}
	if cacheKey != "" {
		b = jsonenc.AppendString(append(b, `,"prompt_cache_key":`...), cacheKey)
	}
	if len(tools) > 0 {
		b = append(append(b, `,"tools":`...), tools...)
	}
	return append(b, '}')
}

func appendMessage(b []byte, m *goopenai.ChatCompletionMessage) []byte {
	b = jsonenc.AppendString(append(b, `{"role":`...), m.Role)
	switch {
	case len(m.MultiContent) > 0:
		b = append(b, `,"content":[`...)
		for j, pt := range m.MultiContent {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendPart(b, &pt)
		}
		b = append(b, ']')
	case m.Content != "":
		b = jsonenc.AppendString(append(b, `,"content":`...), m.Content)
	}
	if m.Name != "" {
		b = jsonenc.AppendString(append(b, `,"name":`...), m.Name)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for j, tc := range m.ToolCalls {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if tc.ID != "" {
				b = append(jsonenc.AppendString(append(b, `"id":`...), tc.ID), ',')
			}
			b = jsonenc.AppendString(append(b, `"type":`...), string(tc.Type))
			b = append(b, `,"function":{`...)
			sep := false
			if tc.Function.Name != "" {
				b = jsonenc.AppendString(append(b, `"name":`...), tc.Function.Name)
				sep = true
			}
			if tc.Function.Arguments != "" {
				if sep {
					b = append(b, ',')
				}
				b = jsonenc.AppendString(append(b, `"arguments":`...), tc.Function.Arguments)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = jsonenc.AppendString(append(b, `,"tool_call_id":`...), m.ToolCallID)
	}
	return append(b, '}')
}

func appendPart(b []byte, pt *goopenai.ChatMessagePart) []byte {
	b = append(b, '{')
	sep := false
	field := func(key string) {
		if sep {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), key...), `":`...)
		sep = true
	}
	if pt.Type != "" {
		field("type")
		b = jsonenc.AppendString(b, string(pt.Type))
	}
	if pt.Text != "" {
		field("text")
		b = jsonenc.AppendString(b, pt.Text)
	}
	if u := pt.ImageURL; u != nil {
		field("image_url")
		b = append(b, '{')
		if u.URL != "" {
			b = jsonenc.AppendString(append(b, `"url":`...), u.URL)
		}
		if u.Detail != "" {
			if u.URL != "" {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(append(b, `"detail":`...), string(u.Detail))
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendFloat32 encodes f as encoding/json does (its floatEncoder, 32 bits); f is finite
// (appendChatBody refuses NaN and ±Inf as encoding/json does).
func appendFloat32(b []byte, f float32) []byte {
	v := float64(f)
	abs := math.Abs(v)
	fmt := byte('f')
	if abs != 0 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
		fmt = 'e'
	}
	b = strconv.AppendFloat(b, v, fmt, -1, 32)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
