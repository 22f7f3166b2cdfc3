package discord

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// Choice buttons (echogate.Outbound.Choices): a question the pipeline puts to a person during a
// tool call. Each button's custom id is choiceIDPrefix plus the choice's value; a press is the
// same KindReaction event as an approval button's, with the value as its Reaction, delivered in
// order (deliverInOrder) like every button press; the pipeline judges who may answer.
const choiceIDPrefix = "echogate_choice:"

// maxCustomID is Discord's limit on a component's custom_id.
const maxCustomID = 100

// choiceComponents is the action row of a question's choices (at most five buttons).
func choiceComponents(choices []echogate.Choice) []any {
	btns := make([]any, 0, len(choices))
	for i, ch := range choices {
		id := choiceIDPrefix + ch.Value
		if i == 5 || len(id) > maxCustomID {
			break
		}
		style := 2 // secondary
		if strings.HasSuffix(ch.Value, ":decline") {
			style = 4 // danger
		}
		btns = append(btns, map[string]any{"type": 2, "style": style, "label": truncateText(ch.Label, 80), "custom_id": id})
	}
	if len(btns) == 0 {
		return nil
	}
	return []any{map[string]any{"type": 1, "components": btns}}
}

// pressedReaction is the Reaction of a press of customID: an approval button's emoji or a
// choice's value; ok is false for buttons that are not the gateway's.
func pressedReaction(customID string) (string, bool) {
	if r, ok := buttonReactions[customID]; ok {
		return r, true
	}
	v, ok := strings.CutPrefix(customID, choiceIDPrefix)
	return v, ok && v != ""
}

// sendDM posts out to out.PrivateTo in a direct message: the Outbound the pipeline sends for
// one person's eyes when the conversation is a guild channel (an Outbound with PrivateTo and no
// channel). It blocks like Send.
func (c *Channel) sendDM(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	var dm *discordgo.Channel
	err := c.call(ctx, "open a DM with "+out.PrivateTo, true, func(opts ...discordgo.RequestOption) error {
		var err error
		dm, err = c.sess.UserChannelCreate(out.PrivateTo, opts...)
		return err
	})
	if err != nil {
		return echogate.MessageRef{}, fmt.Errorf("discord: open a DM with %s: %w", out.PrivateTo, err)
	}
	if dm == nil || dm.ID == "" {
		return echogate.MessageRef{}, fmt.Errorf("discord: open a DM with %s: no channel in the answer", out.PrivateTo)
	}
	out.PrivateTo, out.Conversation.Channel, out.Conversation.DM, out.ReplyTo = "", dm.ID, true, echogate.MessageRef{}
	return c.Send(ctx, out)
}
