package agenttest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// The types below are the OpenAI chat-completions wire format as FakeOpenAI decodes requests and
// encodes answers. They are written from the API reference, independently of any SDK, so wire
// tests catch an SDK or provider that drifts from the protocol.

// ChatRequest is a decoded POST /v1/chat/completions body.
type ChatRequest struct {
	Model               string         `json:"model"`
	Messages            []ChatMessage  `json:"messages"`
	Tools               []ChatTool     `json:"tools,omitempty"`
	ToolChoice          any            `json:"tool_choice,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	User                string         `json:"user,omitempty"`
	PromptCacheKey      string         `json:"prompt_cache_key,omitempty"`

	// Header is the request's HTTP header (Authorization, OpenAI-Organization, …).
	Header http.Header `json:"-"`
	// Seq is the 1-based number of the request among all chat requests the server received.
	Seq int `json:"-"`
}

// StreamOptions is the stream_options object.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Last returns the last message of the request (zero when there is none).
func (r ChatRequest) Last() ChatMessage {
	if len(r.Messages) == 0 {
		return ChatMessage{}
	}
	return r.Messages[len(r.Messages)-1]
}

// LastUser returns the text of the last user message ("" when there is none).
func (r ChatRequest) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// HasTool reports whether the request offers the named function tool.
func (r ChatRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// ChatMessage is one message of a request. Content holds the text whether it came as a string or as
// an array of parts (texts joined); Parts holds the array form.
type ChatMessage struct {
	Role             string
	Content          string
	Parts            []ContentPart
	Name             string
	ToolCalls        []WireToolCall
	ToolCallID       string
	ReasoningContent string
}

// ContentPart is one element of an array content.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image_url content part.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// UnmarshalJSON accepts content as a string, null, or an array of parts.
func (m *ChatMessage) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		Name             string          `json:"name"`
		ToolCalls        []WireToolCall  `json:"tool_calls"`
		ToolCallID       string          `json:"tool_call_id"`
		ReasoningContent string          `json:"reasoning_content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = ChatMessage{Role: raw.Role, Name: raw.Name, ToolCalls: raw.ToolCalls, ToolCallID: raw.ToolCallID, ReasoningContent: raw.ReasoningContent}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		if err := json.Unmarshal(c, &m.Parts); err != nil {
			return err
		}
		var texts []string
		for _, p := range m.Parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		m.Content = strings.Join(texts, "\n")
	default:
		return &json.UnsupportedValueError{Str: "content must be a string, null or an array of parts"}
	}
	return nil
}

// MarshalJSON writes content as a string, or as the parts array when Parts is set.
func (m ChatMessage) MarshalJSON() ([]byte, error) {
	type out struct {
		Role             string         `json:"role"`
		Content          any            `json:"content"`
		Name             string         `json:"name,omitempty"`
		ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
		ToolCallID       string         `json:"tool_call_id,omitempty"`
		ReasoningContent string         `json:"reasoning_content,omitempty"`
	}
	o := out{Role: m.Role, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ReasoningContent: m.ReasoningContent}
	switch {
	case m.Parts != nil:
		o.Content = m.Parts
	case m.Content == "" && len(m.ToolCalls) > 0:
		o.Content = nil
	default:
		o.Content = m.Content
	}
	return json.Marshal(o)
}

// WireToolCall is a tool call in a message or (with Index) a streamed fragment of one.
type WireToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function WireFunction `json:"function"`
}

// WireFunction is the function of a tool call.
type WireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ChatTool is one entry of the request's tools.
type ChatTool struct {
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction declares a function tool.
type ChatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// EmbeddingRequest is a decoded POST /v1/embeddings body; Input is normalised to a list.
type EmbeddingRequest struct {
	Model          string
	Input          []string
	Dimensions     int
	EncodingFormat string
	Header         http.Header
	Seq            int
}

// The encoded answer types.

type wireChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *wireUsage    `json:"usage"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	Refusal          *string        `json:"refusal,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
}

type wireUsage struct {
	PromptTokens            int64          `json:"prompt_tokens"`
	CompletionTokens        int64          `json:"completion_tokens"`
	TotalTokens             int64          `json:"total_tokens"`
	PromptTokensDetails     map[string]int `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails map[string]int `json:"completion_tokens_details,omitempty"`
}

type wireCompletion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             *wireUsage         `json:"usage"`
}

type completionChoice struct {
	Index        int           `json:"index"`
	Message      completionMsg `json:"message"`
	Logprobs     any           `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type completionMsg struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	Refusal          *string        `json:"refusal"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
}

type wireError struct {
	Error wireErrorBody `json:"error"`
}

type wireErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

type wireEmbeddingList struct {
	Object string          `json:"object"`
	Data   []wireEmbedding `json:"data"`
	Model  string          `json:"model"`
	Usage  wireEmbedUsage  `json:"usage"`
}

type wireEmbedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

type wireEmbedUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}
