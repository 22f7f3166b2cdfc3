package main

import (
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/slack"
)

// addPlatformChannels adds Slack and Discord when their tokens are configured.
func (g *gateway) addPlatformChannels() error {
	cfg := g.cfg
	if cfg.Slack.BotToken != "" {
		ch, err := slack.New(slack.Config{
			BotToken:       cfg.Slack.BotToken,
			AppToken:       cfg.Slack.AppToken,
			SigningSecret:  cfg.Slack.SigningSecret,
			APIURL:         cfg.Slack.APIURL,
			RequireMention: cfg.Slack.RequireMention,
			ReplyInThread:  cfg.Slack.ReplyInThread,
			Command:        cfg.Slack.Command,
			ThreadHistory:  cfg.Slack.ThreadHistory,

			ThreadReadsPerMinute: cfg.Slack.ThreadReadsPerMinute,
			SuggestedPrompts:     slackPrompts(cfg.Slack.SuggestedPrompts),
		}, g.log)
		if err != nil {
			return err
		}
		g.channels = append(g.channels, ch)
		if cfg.Slack.SigningSecret != "" {
			g.extra["POST /slack/events"] = ch.EventsHandler()
		}
	}
	if cfg.Discord.Token != "" {
		ch, err := discord.New(discord.Config{
			Token:          cfg.Discord.Token,
			APIURL:         cfg.Discord.APIURL,
			ShardID:        cfg.Discord.ShardID,
			ShardCount:     cfg.Discord.ShardCount,
			RequireMention: cfg.Discord.RequireMention,
			MessageContent: cfg.Discord.messageContent(),
			ThreadHistory:  cfg.Discord.ThreadHistory,
			CommandGuilds:  cfg.Discord.CommandGuilds,
		}, g.log)
		if err != nil {
			return err
		}
		g.channels = append(g.channels, ch)
	}
	return nil
}

func slackPrompts(in []SuggestedPromptConfig) []slack.SuggestedPrompt {
	out := make([]slack.SuggestedPrompt, 0, len(in))
	for _, p := range in {
		out = append(out, slack.SuggestedPrompt{Title: p.Title, Message: p.Message})
	}
	return out
}
