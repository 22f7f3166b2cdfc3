package pipeline

import (
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

func TestSanitizeHistory(t *testing.T) {
	call := func(ids ...string) echogate.Message {
		m := echogate.Message{Role: echogate.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, echogate.ToolCall{ID: id, Name: "t"})
		}
		return m
	}
	res := func(id string) echogate.Message {
		return echogate.Message{Role: echogate.RoleTool, ToolCallID: id, Content: "r" + id}
	}
	u := echogate.Message{Role: echogate.RoleUser, Content: "u"}
	a := echogate.Message{Role: echogate.RoleAssistant, Content: "a"}
	render := func(ms []echogate.Message) string {
		var parts []string
		for _, m := range ms {
			switch {
			case len(m.ToolCalls) > 0:
				parts = append(parts, "call")
			case m.Role == echogate.RoleTool && m.IsError:
				parts = append(parts, "missing:"+m.ToolCallID)
			case m.Role == echogate.RoleTool:
				parts = append(parts, "res:"+m.ToolCallID)
			default:
				parts = append(parts, string(m.Role))
			}
		}
		return strings.Join(parts, ",")
	}
	for name, tt := range map[string]struct {
		in   []echogate.Message
		want string
	}{
		"clean":                      {[]echogate.Message{u, call("1"), res("1"), a}, "user,call,res:1,assistant"},
		"window cut the call":        {[]echogate.Message{res("1"), u, a}, "user,assistant"},
		"stopped before result":      {[]echogate.Message{u, call("1", "2"), res("1"), u, a}, "user,call,res:1,missing:2,user,assistant"},
		"unanswered at end":          {[]echogate.Message{u, call("1")}, "user,call,missing:1"},
		"duplicate and stray result": {[]echogate.Message{u, call("1"), res("1"), res("1"), res("9"), a}, "user,call,res:1,assistant"},
	} {
		var hist []echogate.StoredMessage
		for _, m := range tt.in {
			hist = append(hist, echogate.StoredMessage{Message: m})
		}
		if got := render(sanitizeHistory(nil, hist)); got != tt.want {
			t.Errorf("%s: sanitizeHistory = %s, want %s", name, got, tt.want)
		}
	}
}

func TestRedactArgs(t *testing.T) {
	got := RedactArgs(`{"url":"https://x","headers":{"Authorization":"Bearer abc"},"password":"p","list":[{"token":"t"}]}`, 1000)
	for _, secret := range []string{"Bearer abc", `"p"`, `"t"`} {
		if strings.Contains(got, secret) {
			t.Errorf("redactArgs kept %s: %s", secret, got)
		}
	}
	if !strings.Contains(got, "https://x") {
		t.Errorf("redactArgs dropped a harmless value: %s", got)
	}
	if got := RedactArgs(strings.Repeat("é", 1000), 101); !strings.Contains(got, "more characters") || !strings.HasPrefix(got, "éé") {
		t.Errorf("capped = %q", got[:20])
	}
}

// TestContextMessagesOneAllocation guards that a turn's context (checkpoint head, history, note,
// input) is built in one slice: it was copied three times per turn.
func TestContextMessagesOneAllocation(t *testing.T) {
	head := []echogate.Message{{Role: echogate.RoleUser, Content: "summary"}, {Role: echogate.RoleAssistant, Content: "ok"}}
	var hist []echogate.StoredMessage
	for i := range 40 {
		role := echogate.RoleUser
		if i%2 == 1 {
			role = echogate.RoleAssistant
		}
		hist = append(hist, echogate.StoredMessage{Seq: int64(i + 1), Message: echogate.Message{Role: role, Content: "m"}})
	}
	in := []echogate.Message{{Role: echogate.RoleUser, Content: "new"}}
	buf, got := contextMessages(head, hist, in, "the note")
	if len(buf) != 1 || cap(got) != cap(buf)-1 || &buf[1:2][0] != &got[0] {
		t.Fatalf("contextMessages: the messages are not in buf[1:], so the agent loop copies them")
	}
	if len(got) != 44 || got[42].Role != echogate.RoleSystem || got[42].Content != "the note" || got[43].Content != "new" || got[0].Content != "summary" {
		t.Fatalf("contextMessages = %d messages, note at 42 %+v, last %+v", len(got), got[42], got[43])
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = contextMessages(head, hist, in, "the note") }); n != 1 {
		t.Errorf("contextMessages: %v allocations, want 1", n)
	}
}

func BenchmarkContextMessages(b *testing.B) {
	hist := make([]echogate.StoredMessage, 50)
	for i := range hist {
		hist[i] = echogate.StoredMessage{Seq: int64(i + 1), Message: echogate.Message{Role: echogate.RoleUser, Content: "m"}}
	}
	in := []echogate.Message{{Role: echogate.RoleUser, Content: "new"}}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = contextMessages(nil, hist, in, "note")
	}
}
