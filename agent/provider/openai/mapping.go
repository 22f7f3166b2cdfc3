package openai

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

// emptyParameters is sent for a tool whose Spec has no schema: the API requires an object schema.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// emptyToolResult replaces an empty tool result: some servers reject a tool message without content.
const emptyToolResult = "(no output)"

// reasoningModel reports models that take max_completion_tokens and a fixed temperature (OpenAI's
// o-series and gpt-5 family).
func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// chatRequest maps a provider-neutral request to the wire request. Errors wrap ErrBadRequest and
// name the message or tool at fault.
func (p *Provider) chatRequest(req agent.Request) (goopenai.ChatCompletionRequest, error) {
	out := goopenai.ChatCompletionRequest{Model: req.Model, Stream: true}
	if req.Model == "" {
		return out, fmt.Errorf("openai: chat: the request names no model: set ECHOGATE_MODEL or models.default: %w", ErrBadRequest)
	}
	if len(req.Messages) == 0 {
		return out, fmt.Errorf("openai: chat with %s: the request has no messages: %w", req.Model, ErrBadRequest)
	}
	if !p.cfg.OmitStreamUsage {
		out.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	}
	msgs, err := toMessages(getMessages(len(req.Messages)), req.Messages)
	if err != nil {
		return out, fmt.Errorf("openai: chat with %s: %w", req.Model, err)
	}
	out.Messages = msgs
	if out.Tools, err = p.tools.forSpecs(req.Tools); err != nil {
		return out, fmt.Errorf("openai: chat with %s: %w", req.Model, err)
	}
	reasoning := reasoningModel(req.Model)
	if req.MaxTokens > 0 {
		if reasoning {
			out.MaxCompletionTokens = req.MaxTokens
		} else {
			out.MaxTokens = req.MaxTokens
		}
	}
	if req.Temperature != nil && !reasoning {
		t := *req.Temperature
		if t < 0 || t > 2 {
			return out, fmt.Errorf("openai: chat with %s: temperature %v is outside 0..2: %w", req.Model, t, ErrBadRequest)
		}
		if t == 0 {
			// go-openai omits a zero temperature (omitempty), which the API reads as 1. The smallest
			// positive float is sent instead: greedy decoding, as asked.
			t = math.SmallestNonzeroFloat32
		}
		out.Temperature = t
	}
	return out, nil
}

// toMessages appends the wire messages of in to out.
func toMessages(out []goopenai.ChatCompletionMessage, in []echogate.Message) ([]goopenai.ChatCompletionMessage, error) {
	for i, m := range in {
		switch m.Role {
		case echogate.RoleSystem:
			out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: m.Content})
		case echogate.RoleUser:
			msg := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser}
			if len(m.Images) == 0 {
				msg.Content = m.Content
				if msg.Content == "" {
					return nil, fmt.Errorf("message %d: user message has neither text nor images: %w", i, ErrBadRequest)
				}
			} else {
				if m.Content != "" {
					msg.MultiContent = append(msg.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: m.Content})
				}
				for k, img := range m.Images {
					url, err := imageURL(img)
					if err != nil {
						return nil, fmt.Errorf("message %d: image %d: %w", i, k, err)
					}
					msg.MultiContent = append(msg.MultiContent, goopenai.ChatMessagePart{
						Type:     goopenai.ChatMessagePartTypeImageURL,
						ImageURL: &goopenai.ChatMessageImageURL{URL: url, Detail: goopenai.ImageURLDetailAuto},
					})
				}
			}
			out = append(out, msg)
		case echogate.RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				// An empty answer (an aborted turn) carries nothing and some servers reject it.
				continue
			}
			msg := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: m.Content}
			for k, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("message %d: tool call %d has no id or name: %w", i, k, ErrBadRequest)
				}
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				msg.ToolCalls = append(msg.ToolCalls, goopenai.ToolCall{
					ID: tc.ID, Type: goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: tc.Name, Arguments: args},
				})
			}
			out = append(out, msg)
		case echogate.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool result has no tool_call_id: %w", i, ErrBadRequest)
			}
			content := m.Content
			if content == "" {
				content = emptyToolResult
			}
			out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, Content: content, ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q (want system, user, assistant or tool): %w", i, m.Role, ErrBadRequest)
		}
	}
	return out, nil
}

// messagePool holds request message slices between model calls: a call's slice (the whole
// history, converted) lives only until its body is encoded, and was an eighth of the bytes
// the gateway allocated per turn.
var messagePool sync.Pool // of *[]goopenai.ChatCompletionMessage

// getMessages returns an empty slice with room for n messages.
func getMessages(n int) []goopenai.ChatCompletionMessage {
	if p, ok := messagePool.Get().(*[]goopenai.ChatCompletionMessage); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]goopenai.ChatCompletionMessage, 0, n)
}

// putMessages gives back a slice of getMessages once nothing refers to it; slices much larger
// than ordinary requests are left to the collector.
func putMessages(s []goopenai.ChatCompletionMessage) {
	if cap(s) == 0 || cap(s) > 1024 {
		return
	}
	s = s[:cap(s)]
	clear(s) // drop the references to the conversation's strings
	s = s[:0]
	messagePool.Put(&s)
}

func imageURL(img echogate.ImagePart) (string, error) {
	u := img.URL
	switch {
	case u == "":
		return "", fmt.Errorf("no URL: give an https or data: URL: %w", ErrBadRequest)
	case strings.HasPrefix(u, "data:"), strings.HasPrefix(u, "https://"), strings.HasPrefix(u, "http://"):
		return u, nil
	}
	return "", fmt.Errorf("URL %q is neither https nor data: %w", truncate(u, 64), ErrBadRequest)
}

func toTool(spec tools.Spec) (goopenai.Tool, error) {
	if err := tools.ValidateName(spec.Name); err != nil {
		return goopenai.Tool{}, fmt.Errorf("%w: %w", err, ErrBadRequest)
	}
	params := spec.Parameters
	if len(params) == 0 || string(params) == "null" {
		params = emptyParameters
	} else if !json.Valid(params) {
		return goopenai.Tool{}, fmt.Errorf("tool %q: parameters are not valid JSON: fix the tool's schema: %w", spec.Name, ErrBadRequest)
	}
	return goopenai.Tool{
		Type: goopenai.ToolTypeFunction,
		Function: &goopenai.FunctionDefinition{
			Name:        spec.Name,
			Description: spec.Description,
			Parameters:  json.RawMessage(params),
		},
	}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
