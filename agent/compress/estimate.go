package compress

import (
	"unicode/utf8"

	"github.com/echogate/echogate"
)

// Token estimates. They are deliberately simple and err on the high side: ASCII text is about
// four bytes a token for the common BPE vocabularies, other scripts are closer to one token a
// character, and every message carries a few tokens of role and framing.
const (
	// MessageOverhead is the per-message framing (role, separators) in tokens.
	MessageOverhead = 4
	// ToolCallOverhead is the framing of one tool call in an assistant message.
	ToolCallOverhead = 3
	// ImageTokens is charged per image part: a 1024×1024 image at high detail.
	ImageTokens = 765
	// ReplyPriming is added once per request for the assistant reply's framing.
	ReplyPriming = 3
)

// EstimateText estimates the tokens of s: a token per four ASCII bytes (rounded up) plus one per
// non-ASCII character.
func EstimateText(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		other++
	}
	return (ascii+3)/4 + other
}

// EstimateMessage estimates the tokens one message takes in a chat request: its text, name, tool
// calls and images plus MessageOverhead.
func EstimateMessage(m echogate.Message) int {
	n := MessageOverhead + EstimateText(m.Content)
	if m.Name != "" {
		n += EstimateText(m.Name) + 1
	}
	if m.ToolCallID != "" {
		n += EstimateText(m.ToolCallID)
	}
	for _, c := range m.ToolCalls {
		n += ToolCallOverhead + EstimateText(c.Name) + EstimateText(c.Arguments) + EstimateText(c.ID)
	}
	n += len(m.Images) * ImageTokens
	return n
}

// EstimateMessages estimates a whole request's messages with est (EstimateMessage when nil),
// including ReplyPriming.
func EstimateMessages(msgs []echogate.Message, est func(echogate.Message) int) int {
	if est == nil {
		est = EstimateMessage
	}
	n := ReplyPriming
	for _, m := range msgs {
		n += est(m)
	}
	return n
}
