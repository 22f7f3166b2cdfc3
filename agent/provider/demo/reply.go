package demo

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// answerToolResults answers from the tool messages that end the transcript.
func answerToolResults(msgs []echogate.Message) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == echogate.RoleTool {
		start--
	}
	names := map[string]string{}
	if start > 0 {
		for _, c := range msgs[start-1].ToolCalls {
			names[c.ID] = c.Name
		}
	}
	var b strings.Builder
	// The label opens the turn's reply once: when the call that asked for the tools already
	// carried it, the answer that follows (streamed into the same reply) does not repeat it.
	labelled := start > 0 && strings.Contains(msgs[start-1].Content, Label)
	if !labelled {
		b.WriteString(Label)
	}
	for i, r := range msgs[start:] {
		name := r.Name
		if name == "" {
			name = names[r.ToolCallID]
		}
		if name == "" {
			name = "the tool"
		}
		content := strings.TrimSpace(r.Content)
		if i > 0 || !labelled {
			b.WriteString("\n\n")
		}
		switch {
		case strings.HasPrefix(content, "not approved: "):
			fmt.Fprintf(&b, "I did not run the %s tool: %s.", name, clip(strings.TrimPrefix(content, "not approved: "), 300))
		case r.IsError:
			fmt.Fprintf(&b, "The %s tool failed: %s", name, clip(content, 300))
		case name == toolTime:
			fmt.Fprintf(&b, "According to the current_time tool, it is %s.", clip(readableTime(content), 200))
		case name == toolFetch:
			fmt.Fprintf(&b, "I fetched the page (%d characters). It begins:\n\n> %s", utf8.RuneCountInString(content), clip(oneLine(content), 400))
		default:
			fmt.Fprintf(&b, "The %s tool answered: %s", name, clip(readableJSON(content), 300))
		}
	}
	return b.String()
}

// readableTime renders current_time's JSON result as a sentence's worth of text ("Tuesday,
// 1 December 2026, 23:18 UTC"); anything else is returned as it is.
func readableTime(content string) string {
	var r struct {
		Time         string `json:"time"`
		Abbreviation string `json:"abbreviation"`
		Timezone     string `json:"timezone"`
	}
	if json.Unmarshal([]byte(content), &r) != nil || r.Time == "" {
		return content
	}
	t, err := time.Parse(time.RFC3339, r.Time)
	if err != nil {
		return content
	}
	zone := r.Abbreviation
	if zone == "" {
		zone = r.Timezone
	}
	out := t.Format("Monday, 2 January 2006, 15:04")
	if zone != "" {
		out += " " + zone
	}
	if r.Timezone != "" && r.Timezone != zone {
		out += " (" + r.Timezone + ")"
	}
	return out
}

// readableJSON renders a flat JSON object as "key: value" pairs in key order, so the demo's answer
// reads as text rather than as the tool's raw JSON; anything else is returned as it is.
func readableJSON(content string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(content), &obj) != nil || len(obj) == 0 {
		return content
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := strings.TrimSpace(string(obj[k]))
		var s string
		if json.Unmarshal(obj[k], &s) == nil {
			v = s
		}
		parts = append(parts, k+": "+v)
	}
	return strings.Join(parts, "; ")
}

func echo(req agent.Request, user string) string {
	var b strings.Builder
	b.WriteString(Label)
	b.WriteString("\n\n")
	if user == "" {
		b.WriteString("I did not find a message from you.")
	} else {
		fmt.Fprintf(&b, "You said: “%s”", clip(oneLine(user), 300))
	}
	users, images := 0, 0
	system := 0
	for _, m := range req.Messages {
		switch m.Role {
		case echogate.RoleUser:
			users++
			images += len(m.Images)
		case echogate.RoleSystem:
			system += len(m.Content)
		}
	}
	fmt.Fprintf(&b, "\n\nI received %d message%s (%d from you", len(req.Messages), plural(len(req.Messages)), users)
	if images > 0 {
		fmt.Fprintf(&b, ", %d image%s", images, plural(images))
	}
	b.WriteString(")")
	if system > 0 {
		fmt.Fprintf(&b, ", a system prompt of %d characters", system)
	}
	names := make([]string, 0, len(req.Tools))
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, " and %d tool%s: %s.", len(names), plural(len(names)), strings.Join(names, ", "))
	} else {
		b.WriteString(" and no tools.")
	}
	b.WriteString("\n\nThis offline model only echoes. Try “what time is it?” or “fetch https://example.com” to see a tool call")
	if _, ok := findTool(req.Tools, toolSchedule); ok {
		b.WriteString(", “" + ApprovalPhrase + " check the deploys” to see an approval prompt")
	}
	b.WriteString(", or set OPENAI_API_KEY (and OPENAI_BASE_URL for other endpoints) for real answers.")
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
