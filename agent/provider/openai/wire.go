package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate/tools"
)

// The chat request body is encoded here rather than by go-openai: its message and tool types
// have custom MarshalJSON methods, so encoding/json encoded every message and every tool schema
// separately and then validated and compacted each output again, on every model call. These
// plain structs encode in one pass; the tool schemas, the same on every call of a session, are
// encoded once per catalogue and spliced in; and the body is built once per Generate, not per
// retry. The JSON means the same as go-openai's (TestWireBodyMatchesGoOpenAI).

type wireRequest struct {
	Model               string             `json:"model"`
	Messages            []wireMessage      `json:"messages"`
	MaxTokens           int                `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                `json:"max_completion_tokens,omitempty"`
	Temperature         float32            `json:"temperature,omitempty"`
	Stream              bool               `json:"stream"`
	StreamOptions       *wireStreamOptions `json:"stream_options,omitempty"`
	PromptCacheKey      string             `json:"prompt_cache_key,omitempty"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage is one message; Content is a string, or the parts array for images.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content,omitempty"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wirePart struct {
	Type     string        `json:"type,omitempty"`
	Text     string        `json:"text,omitempty"`
	ImageURL *wireImageURL `json:"image_url,omitempty"`
}

type wireImageURL struct {
	URL    string `json:"url,omitempty"`
	Detail string `json:"detail,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// toolsCache holds the last tool catalogue seen, validated, converted and encoded. Sessions
// share one catalogue (the registry's), so one entry hits nearly always.
type toolsCache struct {
	mu    sync.Mutex
	specs []tools.Spec
	tools []goopenai.Tool
	json  []byte
}

// forSpecs returns the wire tools of specs, validated (toTool), from the cache when specs equal
// the cached catalogue. The result is shared: callers must not modify it.
func (c *toolsCache) forSpecs(specs []tools.Spec) ([]goopenai.Tool, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.EqualFunc(specs, c.specs, sameSpec) {
		return c.tools, nil
	}
	out := make([]goopenai.Tool, 0, len(specs))
	for _, spec := range specs {
		t, err := toTool(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	c.specs, c.tools, c.json = slices.Clone(specs), out, nil
	return out, nil
}

// encode returns the JSON array of ts: the cached encoding when ts is the cached catalogue.
func (c *toolsCache) encode(ts []goopenai.Tool) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached := len(ts) == len(c.tools) && len(ts) > 0 && &ts[0] == &c.tools[0]
	if cached && c.json != nil {
		return c.json, nil
	}
	b, err := json.Marshal(ts)
	if err != nil {
		return nil, err
	}
	if cached {
		c.json = b
	}
	return b, nil
}

func sameSpec(a, b tools.Spec) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters)
}

// appendChatBody appends the body of a streaming chat request to dst (a reused buffer, or nil):
// what json.Marshal of the wire structs above gives, byte for byte
// (TestEncodeChatMatchesMarshal), appended into a buffer sized from the request instead of
// reflected over, boxed, copied out and copied again to splice the tools in.
func (p *Provider) appendChatBody(dst []byte, creq *goopenai.ChatCompletionRequest, cacheKey string) ([]byte, error) {
	if t := float64(creq.Temperature); math.IsNaN(t) || math.IsInf(t, 0) {
		return nil, &json.UnsupportedValueError{Value: reflect.ValueOf(creq.Temperature), Str: strconv.FormatFloat(t, 'g', -1, 32)}
	}
	var tools []byte
	if len(creq.Tools) > 0 {
		var err error
		if tools, err = p.tools.encode(creq.Tools); err != nil {
			return nil, err
		}
	}
	if size := chatSize(creq) + len(tools); cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	return appendChat(dst, creq, cacheKey, tools), nil
}
