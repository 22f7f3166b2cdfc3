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

// choiceComponents are the action rows of a question's choices: five buttons a row, at most
// five rows (Discord's limits); a choice whose custom id would pass 100 characters is left out.
func choiceComponents(choices []echogate.Choice) []any {
	var rows []any
	var btns []any
	for _, ch := range choices {
		id := choiceIDPrefix + ch.Value
		if len(id) > maxCustomID {
			continue
		}
		style := 2 // secondary
		if strings.HasSuffix(ch.Value, ":decline") {
			style = 4 // danger
		}
		btns = append(btns, map[string]any{"type": 2, "style": style, "label": truncateText(ch.Label, 80), "custom_id": id})
		if len(btns) == 5 {
			rows, btns = append(rows, map[string]any{"type": 1, "components": btns}), nil
		}
		if len(rows) == 5 {
			return rows
		}
	}
	if len(btns) > 0 {
		rows = append(rows, map[string]any{"type": 1, "components": btns})
	}
	return rows
}

// pressedReaction is the Reaction of a press of customID: an approval button's emoji or a
// choice's value; ok is false for buttons that are not the gateway's.
func pressedReaction(customID string) (string, bool) {
	if r, ok := buttonReactions[customID]; ok {
		return r, true
	}
	v, ok := strings.CutPrefix(customID, choiceIDPrefix)
	if !ok || v == "" {
		return "", false
	}
	return v, true
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
