package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/lazyre"
)

// Limits of the call block of an approval prompt: every top-level argument is shown, each
// value cut on its own, so a long value cannot push another out of view.
const (
	maxPromptKeys     = 20   // top-level arguments shown by name and value
	maxPromptKeyLen   = 64   // bytes of an argument's name
	maxPromptValueLen = 200  // bytes of one argument's value, as JSON
	maxFullArgs       = 8000 // bytes of the full arguments posted after a prompt that cut them
	maxPromptProse    = 1500 // bytes of the model's words quoted under a prompt
)

// approvalPrompt is the text of an approval prompt: the call first, then how to decide. The
// call block is rendered from the parsed arguments (callBlock), so nothing the model wrote can
// end it early or appear above it; the model's own words, if any, go under it (modelWords).
func approvalPrompt(call echogate.ToolCall, requester string) string {
	block, cut := callBlock(call.Arguments)
	var b strings.Builder
	fmt.Fprintf(&b, "🔐 **Approval needed**: I want to run `%s` with:\n```\n%s\n```\n", call.Name, block)
	if cut > 0 {
		fmt.Fprintf(&b, "⚠️ Arguments cut here (%d more characters): the full arguments follow in the next message.\n", cut)
	}
	fmt.Fprintf(&b, "React ✅ to approve once, 🔁 to approve `%s` for this conversation, or ❌ to deny (or reply `approve` / `deny`). "+
		"Only %s or an approver can decide.", call.Name, requester)
	return b.String()
}

// callBlock renders tool arguments for the code block of a prompt, secrets masked: a JSON
// object as one "name: value" line per argument (sorted by name), each value compact JSON cut
// at maxPromptValueLen; anything else as one JSON line cut at maxFullArgs. Strings are JSON
// escaped (no raw newline) and backticks are written \u0060, so no argument can close the
// block's fence or start a line of its own. cut counts the characters not shown.
func callBlock(args string) (block string, cut int) {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return capLine(jsonLine(args), maxFullArgs)
	}
	obj, ok := redactValue(v).(map[string]any)
	if !ok {
		return capLine(jsonLine(v), maxFullArgs)
	}
	keys := slices.Sorted(maps.Keys(obj))
	lines := make([]string, 0, min(len(keys), maxPromptKeys)+1)
	for i, k := range keys {
		if i == maxPromptKeys {
			lines = append(lines, fmt.Sprintf("… %d more arguments", len(keys)-i))
			for _, k := range keys[i:] {
				cut += len(k) + len(jsonLine(obj[k]))
			}
			break
		}
		name, nc := capLine(noTicks(k), maxPromptKeyLen)
		val, vc := capLine(jsonLine(obj[k]), maxPromptValueLen)
		cut += nc + vc
		lines = append(lines, name+": "+val)
	}
	if len(keys) == 0 {
		lines = append(lines, "(no arguments)")
	}
	return strings.Join(lines, "\n"), cut
}

// fullArgs renders every argument, secrets masked, for the message that follows a prompt
// whose call block cut them: indented JSON in a fence no argument can close, itself cut at
// maxFullArgs (channels split long messages). ok is false when the prompt showed them all.
func fullArgs(call echogate.ToolCall) (text string, ok bool) {
	if _, cut := callBlock(call.Arguments); cut == 0 {
		return "", false
	}
	all := noTicks(RedactArgs(call.Arguments, math.MaxInt))
	body, rest := capLine(all, maxFullArgs)
	text = fmt.Sprintf("Full arguments of the `%s` call above (secrets masked):\n```\n%s\n```", call.Name, body)
	if rest > 0 {
		text += fmt.Sprintf("\n⚠️ %d more characters are not shown anywhere in chat: deny unless you know what the whole call does.", rest)
	}
	return text, true
}

// modelWords quotes what the model wrote with a call that needs approval, under the prompt and
// marked as the model's, so it cannot pass for the prompt.
func modelWords(text string) string {
	text, _ = capLine(strings.TrimSpace(text), maxPromptProse)
	var b strings.Builder
	b.WriteString("_The model's words (not part of the call above):_")
	for line := range strings.SplitSeq(text, "\n") {
		b.WriteString("\n> ")
		b.WriteString(strings.ReplaceAll(line, "```", "ˋˋˋ")) // no code block: the quote ends the prompt
	}
	return b.String()
}

// jsonLine is v as compact JSON (a string when v is one), backticks escaped (noTicks).
func jsonLine(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return noTicks(fmt.Sprint(v))
	}
	return noTicks(string(b))
}

// noTicks writes backticks as \u0060 (what JSON reads as the same character), so the text
// cannot open or close a code span or block.
func noTicks(s string) string { return strings.ReplaceAll(s, "`", `\u0060`) }

// capLine cuts s at max bytes without splitting a UTF-8 sequence, marking the cut; cut is the
// number of bytes not shown.
func capLine(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	c := max
	for c > 0 && (s[c]&0xC0) == 0x80 {
		c--
	}
	return s[:c] + "…", len(s) - c
}

var secretKey = lazyre.New(`(?i)(pass(word)?|secret|token|api[_-]?key|authorization|auth|cookie|credential|private[_-]?key)`)

// RedactArgs renders tool arguments for people: JSON indented, values of secret-looking keys
// (password, token, api_key, authorization, …) replaced by "***", length capped at max bytes
// without splitting a UTF-8 sequence. Approval prompts, turn events and the console use it.
func RedactArgs(args string, max int) string {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err == nil {
		v = redactValue(v)
		if b, err := json.MarshalIndent(v, "", "  "); err == nil {
			args = string(b)
		}
	}
	return capText(args, max)
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if secretKey.MatchString(k) {
				x[k] = "***"
			} else {
				x[k] = redactValue(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = redactValue(x[i])
		}
	}
	return v
}

func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more characters)", len(s)-cut)
}

func joinText(a, b string) string {
	if strings.TrimSpace(a) == "" {
		return b
	}
	return a + "\n\n" + b
}

// budgetText is the user-facing text of a budget error: the limit, and when it resets.
func budgetText(err error) string {
	s := err.Error()
	s = strings.TrimSuffix(s, ": "+agent.ErrBudget.Error())
	return "Stopped: " + s
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
