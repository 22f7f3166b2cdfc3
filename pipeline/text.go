package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/lazyre"
)

func approvalPrompt(call echogate.ToolCall, requester string) string {
	args := RedactArgs(call.Arguments, maxPromptArgs)
	return fmt.Sprintf("🔐 **Approval needed**: I want to run `%s` with:\n```\n%s\n```\n"+
		"React ✅ to approve once, 🔁 to approve `%s` for this conversation, or ❌ to deny (or reply `approve` / `deny`). "+
		"Only %s or an approver can decide.", call.Name, args, call.Name, requester)
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
