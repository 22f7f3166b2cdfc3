package slack

import (
	"context"
	"errors"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// maxHomeUsers bounds the users the channel remembers as welcomed (messages tab) and as
// having the home view (home tab). A user forgotten by the bound, or by a restart, is asked
// about once more: the welcome is only posted into a DM that is still empty.
const maxHomeUsers = 4096

// appHomeOpened answers a user opening the app's home. On the Messages tab, the first time a
// user opens it, a short welcome with the suggested prompts goes into the (still empty) DM; on
// the Home tab the home view is published once per user per process. Neither is a turn.
// Failures are logged; a failed welcome is tried again at the next open.
func (c *Channel) appHomeOpened(ctx context.Context, e *slackevents.AppHomeOpenedEvent) {
	if e.User == "" || e.User == c.identity().UserID {
		return
	}
	switch e.Tab {
	case "messages":
		c.welcome(ctx, e.User, e.Channel)
	case "home":
		c.publishHome(ctx, e.User)
	}
}

// welcome posts the welcome into the user's DM with the app, once per user: a DM that already
// holds messages (the user has talked to the bot, or was welcomed before a restart) gets none.
func (c *Channel) welcome(ctx context.Context, user, ch string) {
	if !isDMChannel(ch) || !c.welcomed.AddIfAbsent(user, struct{}{}) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	h, err := c.api.GetConversationHistoryContext(cctx, &slack.GetConversationHistoryParameters{ChannelID: ch, Limit: 1})
	cancel()
	if err != nil {
		c.logAPIError("conversations.history", ch, err)
		c.welcomed.Remove(user)
		return
	}
	if len(h.Messages) > 0 {
		return // not the first visit
	}
	text := welcomeText(c.cfg.SuggestedPrompts, c.cfg.Command)
	err = c.call(ctx, "chat.postMessage", ch, prioHigh, func(ctx context.Context) error {
		_, _, err := c.api.PostMessageContext(ctx, ch, slack.MsgOptionText(text, false))
		return err
	})
	if err != nil {
		c.welcomed.Remove(user)
		c.log.Warn("slack welcome not posted", "slack_channel", ch, "error", err)
		return
	}
	c.log.Info("slack welcome posted on the messages tab", "slack_channel", ch)
}

// welcomeText is the first message a user sees in the DM: what the bot is, the suggested
// prompts (what to send to start), and the command for the rest.
func welcomeText(prompts []SuggestedPrompt, command string) string {
	var b strings.Builder
	b.WriteString("👋 Hi! I'm an AI agent. Ask me anything here, or mention me in a channel and I'll answer in the thread.")
	if len(prompts) > 0 {
		b.WriteString("\nTo start, try:")
		for _, p := range prompts {
			b.WriteString("\n• *" + p.Title + "*: " + p.Message)
		}
	}
	b.WriteString("\n`" + command + " help` lists what else I understand.")
	return b.String()
}

// publishHome publishes the home view for user, once per user per process (it is static).
// A workspace where the Home tab is off answers not_enabled; that is logged at debug.
func (c *Channel) publishHome(ctx context.Context, user string) {
	if !c.homed.AddIfAbsent(user, struct{}{}) {
		return
	}
	view := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: homeBlocks(c.cfg.SuggestedPrompts, c.cfg.Command)}}
	err := c.call(ctx, "views.publish", "views.publish", prioHigh, func(ctx context.Context) error {
		_, err := c.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view})
		return err
	})
	if err != nil {
		c.homed.Remove(user)
		var se slack.SlackErrorResponse
		if errors.As(err, &se) && se.Err == "not_enabled" {
			c.log.Debug("slack home view not published: the Home tab is off (features.app_home.home_tab_enabled)")
			return
		}
		c.log.Warn("slack home view not published", "error", err)
	}
}

// homeBlocks is the Home tab: a header, how to talk to the bot, and the suggested prompts.
func homeBlocks(prompts []SuggestedPrompt, command string) []slack.Block {
	md := func(s string) *slack.SectionBlock {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, s, false, false), nil, nil)
	}
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "echogate", false, false)),
		md("An AI agent in your workspace. Write to it in *Messages*, or mention it in a channel: it answers in the thread. " +
			"React 🛑 to stop an answer; approve tool calls with the buttons or ✅ 🔁 ❌."),
	}
	if len(prompts) > 0 {
		var b strings.Builder
		b.WriteString("*Try:*")
		for _, p := range prompts {
			b.WriteString("\n• *" + p.Title + "*: " + p.Message)
		}
		blocks = append(blocks, md(b.String()))
	}
	return append(blocks, md("`"+command+" help` lists the commands (usage, model, stop, new)."))
}
