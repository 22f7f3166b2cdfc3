package console

import (
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/lazyre"
)

// noTerminalReason is why a paused call was not run when nobody could be asked: it reaches the
// model (and so the answer) in place of "X denied it", because nobody did.
const noTerminalReason = "nobody was asked: `echogate chat -m` ran without a terminal to ask on (run `echogate chat` interactively, or pass --approve to allow it)"

// approvalLine is the terminal's approval prompt: the call, plainly. The platforms' prompt
// (react ✅ …, who may decide, the model's words already streamed above) is not for a terminal,
// whose one user answers the question that follows.
func approvalLine(ev echogate.TurnEvent) string {
	tool := ev.Tool
	if tool == "" {
		tool = "a tool"
	}
	args := preview(ev.Args, argsPreview)
	if args == "" || args == "{}" {
		return "🔐 approval needed: run " + tool + " (no arguments)"
	}
	return "🔐 approval needed: run " + tool + " with " + args
}

var (
	boldRE = lazyre.New(`\*\*([^*\n]+)\*\*`)
	codeRE = lazyre.New("`([^`\n]+)`")
)

// terminalText renders the gateway's own Markdown (command answers, notices) for a terminal:
// **bold** is bold on a terminal and plain text elsewhere, `code` loses its backticks, code
// fences are dropped, and bullets ("• ", "- ") are indented as a list.
func terminalText(s string, tty bool) string {
	bold := "$1"
	if tty {
		bold = "\x1b[1m$1\x1b[22m"
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, ln := range lines {
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			continue
		}
		for _, b := range []string{"• ", "- ", "* "} {
			if rest, ok := strings.CutPrefix(ln, b); ok {
				ln = "  • " + rest
				break
			}
		}
		ln = boldRE.ReplaceAllString(ln, bold)
		ln = codeRE.ReplaceAllString(ln, "$1")
		out = append(out, ln)
	}
	return strings.Join(out, "\n")
}
