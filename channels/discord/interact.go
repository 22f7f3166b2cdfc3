package discord

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// baseIntents are the gateway intents the channel always identifies with. MESSAGE_CONTENT is
// added only with Config.MessageContent: DMs, messages that mention the bot and the bot's own
// messages carry their content without it.
const baseIntents = discordgo.IntentsDirectMessages |
	discordgo.IntentsDirectMessageReactions |
	discordgo.IntentsGuildMessages |
	discordgo.IntentsGuildMessageReactions

// intents returns the intents of cfg.
func (cfg Config) intents() discordgo.Intent {
	if cfg.MessageContent {
		return baseIntents | discordgo.IntentsMessageContent
	}
	return baseIntents
}

// Approval buttons: custom ids and the canonical reaction each one stands for. A press is the
// same InboundEvent as that reaction: one decision path, one authorization.
var buttonReactions = map[string]string{
	"echogate_approve":         echogate.ReactionApprove,
	"echogate_approve_session": echogate.ReactionApproveSession,
	"echogate_deny":            echogate.ReactionDeny,
}

// approvalComponents is the action row of an approval prompt, as the REST API takes it.
var approvalComponents = []any{map[string]any{"type": 1, "components": []any{
	map[string]any{"type": 2, "style": 3, "label": "Approve", "emoji": map[string]any{"name": "✅"}, "custom_id": "echogate_approve"},
	map[string]any{"type": 2, "style": 1, "label": "Approve for this conversation", "emoji": map[string]any{"name": "🔁"}, "custom_id": "echogate_approve_session"},
	map[string]any{"type": 2, "style": 4, "label": "Deny", "emoji": map[string]any{"name": "❌"}, "custom_id": "echogate_deny"},
}}}

// CommandName is the application command the channel registers; its subcommands are the
// pipeline's commands.
const CommandName = "echogate"

// applicationCommands is what the channel registers (bulk overwrite: idempotent).
func applicationCommands() []*discordgo.ApplicationCommand {
	sub := func(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name, Description: desc, Options: opts}
	}
	return []*discordgo.ApplicationCommand{{
		Name: CommandName, Description: "Talk to the echogate agent about this conversation",
		Options: []*discordgo.ApplicationCommandOption{
			sub("usage", "Your spend and limits"),
			sub("model", "Show or pick the model of this conversation", &discordgo.ApplicationCommandOption{
				Type: discordgo.ApplicationCommandOptionString, Name: "name", Description: "a model name, or auto"}),
			sub("stop", "Stop the running turn"),
			sub("new", "Forget this conversation and start over"),
			sub("schedules", "Your scheduled jobs"),
			sub("mcp", "Your logins to MCP servers", &discordgo.ApplicationCommandOption{
				Type: discordgo.ApplicationCommandOptionString, Name: "action", Description: "login NAME or revoke NAME; empty: list"}),
			sub("help", "List the commands"),
		},
	}}
}

// registerCommands registers the application command once per process, globally or in the
// configured guilds. A failure is logged: `!usage` words keep working.
func (c *Channel) registerCommands(appID string) {
	if c.cfg.DisableCommands || appID == "" || !c.commandsOnce.CompareAndSwap(false, true) {
		return
	}
	c.spawn(func() {
		ctx := c.context()
		guilds := c.cfg.CommandGuilds
		if len(guilds) == 0 {
			guilds = []string{""}
		}
		for _, g := range guilds {
			err := c.call(ctx, "register application commands", true, func(opts ...discordgo.RequestOption) error {
				_, err := c.sess.ApplicationCommandBulkOverwrite(appID, g, applicationCommands(), opts...)
				return err
			})
			if err != nil {
				c.commandsOnce.Store(false) // try again at the next READY
				c.log.Warn("discord: application commands not registered; `!usage` words still work", "err", err, "guild", g)
				return
			}
		}
		c.log.Info("discord: application commands registered", "command", "/"+CommandName, "guilds", len(c.cfg.CommandGuilds))
	})
}

// interactionToken encodes what answering an interaction needs in InboundEvent.Interaction.
func interactionToken(i *discordgo.Interaction) string { return i.AppID + "\x1f" + i.Token }

func parseInteractionToken(s string) (*discordgo.Interaction, bool) {
	app, tok, ok := strings.Cut(s, "\x1f")
	if !ok || app == "" || tok == "" {
		return nil, false
	}
	return &discordgo.Interaction{AppID: app, Token: tok}, true
}

// onInteraction acknowledges an interaction at once (Discord wants it within 3 s) and hands
// its event to the sink: a button press on an approval prompt (acknowledged as a deferred
// update: the prompt's edit is the visible answer) or the application command (acknowledged
// as a deferred private reply, which the pipeline's answer fills).
func (c *Channel) onInteraction(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
	if ic == nil || ic.Interaction == nil {
		return
	}
	i := ic.Interaction
	ev, ack, ok := mapInteraction(i, c.BotID(), c.clock.Now())
	if !ok {
		return
	}
	c.spawn(func() {
		ctx := c.context()
		err := c.call(ctx, "acknowledge interaction", false, func(opts ...discordgo.RequestOption) error {
			return c.sess.InteractionRespond(i, ack, opts...)
		})
		if err != nil {
			c.log.Warn("discord: acknowledge interaction", "err", err, "event_id", ev.ID)
		}
		c.deliverInOrder(i.ChannelID, ev)
	})
}

// mapInteraction maps an interaction to its event and acknowledgement. Pure.
func mapInteraction(i *discordgo.Interaction, botID string, now time.Time) (echogate.InboundEvent, *discordgo.InteractionResponse, bool) {
	var user *discordgo.User
	name := ""
	switch {
	case i.Member != nil && i.Member.User != nil:
		user, name = i.Member.User, i.Member.Nick
	case i.User != nil:
		user = i.User
	}
	if user == nil || user.ID == "" || user.Bot || user.ID == botID || i.ChannelID == "" || i.ID == "" || i.Token == "" {
		return echogate.InboundEvent{}, nil, false
	}
	if name == "" {
		name = user.GlobalName
	}
	if name == "" {
		name = user.Username
	}
	conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Workspace: i.GuildID, Channel: i.ChannelID, DM: i.GuildID == ""}
	actor := echogate.Actor{ID: user.ID, Name: name}
	switch i.Type {
	case discordgo.InteractionMessageComponent:
		emoji, ok := pressedReaction(i.MessageComponentData().CustomID)
		if !ok || i.Message == nil {
			return echogate.InboundEvent{}, nil, false
		}
		target := echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: i.ChannelID, ID: i.Message.ID}
		return echogate.InboundEvent{ID: "button:" + i.ID, Kind: echogate.KindReaction, Conversation: conv, Actor: actor,
				Reaction: emoji, Target: target, Message: target, ReceivedAt: now},
			&discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, true
	case discordgo.InteractionApplicationCommand:
		data := i.ApplicationCommandData()
		if data.Name != CommandName {
			return echogate.InboundEvent{}, nil, false
		}
		text := "/help"
		if len(data.Options) > 0 {
			sub := data.Options[0]
			text = "/" + sub.Name
			for _, o := range sub.Options {
				if s, ok := o.Value.(string); ok && s != "" {
					text += " " + s
				}
			}
		}
		return echogate.InboundEvent{ID: "command:" + i.ID, Kind: echogate.KindDirect, Conversation: conv, Actor: actor, Text: text,
				Message: echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: i.ChannelID}, Interaction: interactionToken(i), ReceivedAt: now},
			&discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
				Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}}, true
	}
	return echogate.InboundEvent{}, nil, false
}

// errInteractionToken: Outbound.Interaction is not a token this channel made.
var errInteractionToken = errors.New("discord: answer interaction: Outbound.Interaction is not an interaction of this channel")

// respondPrivately fills the deferred private reply of an interaction.
func (c *Channel) respondPrivately(ctx context.Context, token, text string) (echogate.MessageRef, error) {
	i, ok := parseInteractionToken(token)
	if !ok {
		return echogate.MessageRef{}, errInteractionToken
	}
	content := truncateText(text, MaxMessageLength)
	var msg *discordgo.Message
	err := c.call(ctx, "answer interaction", true, func(opts ...discordgo.RequestOption) error {
		var err error
		msg, err = c.sess.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &content}, opts...)
		return err
	})
	if err != nil {
		return echogate.MessageRef{}, err
	}
	ref := echogate.MessageRef{Platform: echogate.PlatformDiscord}
	if msg != nil {
		ref.Channel, ref.ID = msg.ChannelID, msg.ID
	}
	return ref, nil
}
