package agenttest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateChat makes the checks the real API makes on the transcript. It returns the error
// message and the offending parameter, or "" when the request is acceptable.
func validateChat(req ChatRequest) (msg, param string) {
	if req.Model == "" {
		return "you must provide a model parameter", "model"
	}
	if len(req.Messages) == 0 {
		return "[] is too short - 'messages'", "messages"
	}
	if req.StreamOptions != nil && !req.Stream {
		return "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
	}
	for i, t := range req.Tools {
		if t.Type != "function" {
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'.", t.Type), fmt.Sprintf("tools[%d].type", i)
		}
		if !toolNameRE.MatchString(t.Function.Name) {
			return fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i), fmt.Sprintf("tools[%d].function.name", i)
		}
		if len(t.Function.Parameters) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(t.Function.Parameters, &obj); err != nil {
				return fmt.Sprintf("Invalid schema for function '%s': parameters must be a JSON object.", t.Function.Name), fmt.Sprintf("tools[%d].function.parameters", i)
			}
			if typ, _ := obj["type"].(string); typ != "object" {
				return fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%v\"'.", t.Function.Name, obj["type"]), fmt.Sprintf("tools[%d].function.parameters", i)
			}
		}
	}
	var pending []string // tool_call ids awaiting a tool message
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role), fmt.Sprintf("messages[%d].role", i)
		}
		if m.Role == "tool" {
			if m.ToolCallID == "" {
				return fmt.Sprintf("Missing required parameter: 'messages[%d].tool_call_id'.", i), fmt.Sprintf("messages[%d].tool_call_id", i)
			}
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", fmt.Sprintf("messages.[%d].role", i)
			}
			pending = slices.Delete(pending, j, j+1)
			continue
		}
		if len(pending) > 0 {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(pending, ", "), "messages"
		}
		if m.Role == "assistant" {
			for k, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return fmt.Sprintf("Missing required parameter: 'messages[%d].tool_calls[%d].id' or '.function.name'.", i, k), fmt.Sprintf("messages[%d].tool_calls[%d]", i, k)
				}
				pending = append(pending, tc.ID)
			}
		}
		if m.Role == "user" && m.Content == "" && len(m.Parts) == 0 {
			return fmt.Sprintf("Invalid 'messages[%d].content': empty user message.", i), fmt.Sprintf("messages[%d].content", i)
		}
	}
	if len(pending) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(pending, ", "), "messages"
	}
	return "", ""
}
