package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/echogate/echogate/tools"
)

// AskUserName is the stable name of the ask_user tool.
const AskUserName = "ask_user"

// maxQuestion bounds a question (characters); a chat prompt longer than this is a mistake.
const maxQuestion = 2000

// AskUserConfig configures ask_user. It has no settings yet; the zero value is the only value.
type AskUserConfig struct{}

type askUser struct{ spec tools.Spec }

type askArgs struct {
	Question string `json:"question"`
}

// NewAskUser returns the ask_user tool (Safe). Its Call returns a *tools.AskUserError carrying
// the question; the agent loop pauses the turn on it and the user's next message in the session
// becomes the call's result.
func NewAskUser(AskUserConfig) (tools.Tool, error) {
	return &askUser{spec: tools.Spec{
		Name: AskUserName,
		Description: "Ask the user a question and wait for the answer. Use it when you cannot continue without " +
			"information or a decision only the user has; the user's reply is returned as this tool's result.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"The question to show the user, in the user's language.","minLength":1,"maxLength":2000}},"required":["question"],"additionalProperties":false}`),
		Safety:     tools.Safe,
		Shareable:  true, // the question and its answer are posted in the conversation
	}}, nil
}

func (a *askUser) Spec() tools.Spec { return a.spec }

// Call validates the question and returns (zero Result, *tools.AskUserError). It never blocks.
func (a *askUser) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	var args askArgs
	if res, ok := decodeArgs(AskUserName, raw, &args, `{"question": "Which city do you mean?"}`); !ok {
		return res, nil
	}
	q := strings.TrimSpace(args.Question)
	switch {
	case q == "":
		return tools.Errorf(`ask_user: argument "question" is required and must not be empty; example: {"question": "Which city do you mean?"}`), nil
	case utf8.RuneCountInString(q) > maxQuestion:
		return tools.Errorf("ask_user: the question has %d characters, the limit is %d; ask something shorter", utf8.RuneCountInString(q), maxQuestion), nil
	case !utf8.ValidString(q):
		return tools.Errorf("ask_user: the question is not valid UTF-8 text"), nil
	}
	return tools.Result{}, &tools.AskUserError{Question: q}
}
