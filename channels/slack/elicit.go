package slack

import (
	"strings"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

// Choice buttons (echogate.Outbound.Choices): a question the pipeline puts to a person during a
// tool call. Each button's action id is choiceActionPrefix plus the choice's value; a press
// becomes the same KindReaction event as an approval button's, with the value as its Reaction,
// so it takes the button path (normalizeButton) to the pipeline, which judges who may answer.
const (
	choiceBlockID      = "echogate_choice"
	choiceActionPrefix = "echogate_choice:"
)

// choiceButtons is the actions block of a question's choices.
func choiceButtons(choices []echogate.Choice) slack.Block {
	els := make([]slack.BlockElement, 0, len(choices))
	for _, ch := range choices {
		b := slack.NewButtonBlockElement(choiceActionPrefix+ch.Value, ch.Value, slack.NewTextBlockObject(slack.PlainTextType, cut(ch.Label, 75), true, false))
		els = append(els, b)
	}
	return slack.NewActionBlock(choiceBlockID, els...)
}

// withChoices adds the choice buttons to the last message of a question. A message rendered as
// text only keeps the typed answer as the only way to answer.
func withChoices(msgs []message, choices []echogate.Choice) []message {
	if len(choices) == 0 || len(msgs) == 0 || len(msgs[len(msgs)-1].blocks) == 0 {
		return msgs
	}
	last := &msgs[len(msgs)-1]
	last.blocks = append(append([]slack.Block(nil), last.blocks...), choiceButtons(choices))
	return msgs
}

// pressedReaction is the Reaction of a press of actionID: an approval button's emoji or a
// choice's value; ok is false for buttons that are not the gateway's.
func pressedReaction(actionID string) (string, bool) {
	if r, ok := buttonReactions[actionID]; ok {
		return r, true
	}
	v, ok := strings.CutPrefix(actionID, choiceActionPrefix)
	if !ok || v == "" {
		return "", false
	}
	return v, true
}
