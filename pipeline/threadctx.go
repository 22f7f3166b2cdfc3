package pipeline

import (
	"strconv"
	"strings"

	"github.com/echogate/echogate"
)

// maxThreadContext bounds the characters of thread context one event adds to the model input.
const maxThreadContext = 12000

// withThreadContext puts the earlier messages of the thread (InboundEvent.ThreadContext)
// before the user's text, each attributed to its author; messages withheld because the access
// rules refuse their authors (access.go) are only counted. It becomes part of the user's message
// as saved, so it reaches the model once, from the adapter, and later turns read it from the
// store. The newest messages are kept when the whole does not fit.
func withThreadContext(ev echogate.InboundEvent, text string) string {
	if len(ev.ThreadContext) == 0 {
		return text
	}
	lines := make([]string, 0, len(ev.ThreadContext))
	size, withheld := 0, 0
	for i := len(ev.ThreadContext) - 1; i >= 0; i-- {
		m := ev.ThreadContext[i]
		if m.Withheld {
			withheld++
			continue
		}
		body := strings.TrimSpace(m.Text)
		if body == "" {
			continue
		}
		author := m.Author
		if author == "" {
			author = "someone"
		}
		if m.IsBot {
			author += " (bot)"
		}
		line := author + ": " + strings.ReplaceAll(body, "\n", "\n  ")
		if size+len(line) > maxThreadContext {
			break
		}
		size += len(line) + 1
		lines = append(lines, line)
	}
	if len(lines) == 0 && withheld == 0 {
		return text
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	var b strings.Builder
	b.WriteString("[Earlier messages in this thread, oldest first]\n")
	if len(lines) > 0 {
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\n")
	}
	if withheld > 0 {
		b.WriteString(withheldNote(withheld))
		b.WriteString("\n")
	}
	b.WriteString("[End of earlier messages]\n\n")
	if name := ev.Actor.Name; name != "" {
		b.WriteString(name)
		b.WriteString(": ")
	}
	b.WriteString(text)
	return b.String()
}

// withheldNote tells the model that messages of people the gateway does not serve were left
// out, so a gap in the conversation does not read as a contradiction. It never says who or what.
func withheldNote(n int) string {
	if n == 1 {
		return "(1 earlier message from someone this assistant does not serve was left out)"
	}
	return "(" + strconv.Itoa(n) + " earlier messages from people this assistant does not serve were left out)"
}
