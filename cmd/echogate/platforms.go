package main

import (
	"context"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/slack"
)

// promptSession finds the conversation of an approval prompt from the store: its pause names
// the session, whose record holds the conversation.
func promptSession(st store) func(ctx context.Context, ref echogate.MessageRef) (echogate.ConversationRef, bool) {
	return func(ctx context.Context, ref echogate.MessageRef) (echogate.ConversationRef, bool) {
		pend, err := st.PendingByPrompt(ctx, ref)
		if err != nil {
			return echogate.ConversationRef{}, false
		}
		info, err := st.GetSession(ctx, pend.Session)
		if err != nil {
			return echogate.ConversationRef{}, false
		}
		return info.Conversation, true
	}
}

// storedPrompt finds the prompt of a session's pending approval of a call from the store, so a
// decision reaching a replica other than the one that paused the turn is not refused.
func storedPrompt(st store) func(ctx context.Context, conv echogate.ConversationRef, callID string) (echogate.MessageRef, bool) {
	return func(ctx context.Context, conv echogate.ConversationRef, callID string) (echogate.MessageRef, bool) {
		pend, err := st.GetPending(ctx, conv.SessionKey())
		if err != nil || pend.CallID != callID {
			return echogate.MessageRef{}, false
		}
		return pend.Prompt, true
	}
}

// admits is the adapters' access predicate: the pipeline's own rule (Pipeline.Admits), so the
// adapters spend no platform reads on an event Submit will refuse. The pipeline is built after
// the channels; until then (no event is delivered before it runs) everyone is admitted.
func (g *gateway) admits(ev echogate.InboundEvent) bool {
	if g.pipeline == nil {
		return true
	}
	return g.pipeline.Admits(ev)
}

// addPlatformChannels adds Slack and Discord when their tokens are configured.
func (g *gateway) addPlatformChannels() error {
	cfg := g.cfg
	if cfg.Slack.BotToken != "" {
		scfg := slackConfig(cfg.Slack)
		scfg.OnPanic = func(path string) { g.metrics.AdapterPanic("slack", path) }
		scfg.SessionOf = promptSession(g.store)
		scfg.Admits = g.admits
		cfg.addAgentMentions(&scfg) // agents' require_mention (agents_config.go)
		scfg.NameResolved = func(user, name string) { g.names.Set(echogate.PlatformSlack+":"+user, name) }
		ch, err := slack.New(scfg, g.log)
		if err != nil {
			return err
		}
		g.channels = append(g.channels, ch)
		g.warnSlackSocketLimit() // shards_wiring.go
		if cfg.Slack.SigningSecret != "" {
			g.extra["POST /slack/events"] = ch.EventsHandler()
		}
	}
	if cfg.Discord.Token != "" {
		dcfg := discord.Config{
			Token:          cfg.Discord.Token,
			APIURL:         cfg.Discord.APIURL,
			ShardID:        cfg.Discord.ShardID,
			ShardCount:     cfg.Discord.ShardCount,
			RequireMention: cfg.Discord.RequireMention,
			MessageContent: cfg.Discord.messageContent(),
			ThreadHistory:  cfg.Discord.ThreadHistory,
			CommandGuilds:  cfg.Discord.CommandGuilds,
			OnPanic:        func(path string) { g.metrics.AdapterPanic("discord", path) },
			SessionOf:      promptSession(g.store),
			Admits:         g.admits,
		}
		ch, err := g.discordChannel(dcfg) // shards_wiring.go
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

// slackConfig maps the slack: section onto the adapter's Config.
func slackConfig(c SlackConfig) slack.Config {
	sc := slack.Config{
		BotToken:       c.BotToken,
		AppToken:       c.AppToken,
		SigningSecret:  c.SigningSecret,
		APIURL:         c.APIURL,
		RequireMention: c.RequireMention,
		ReplyInThread:  c.ReplyInThread,
		Command:        c.Command,
		ThreadHistory:  c.ThreadHistory,

		ThreadReadsPerMinute: c.ThreadReadsPerMinute,
		SocketConnections:    c.SocketConnections,
		SuggestedPrompts:     slackPrompts(c.SuggestedPrompts),
	}
	if len(c.Channels) > 0 {
		sc.Channels = make(map[string]slack.ChannelConfig, len(c.Channels))
		for id, cc := range c.Channels {
			sc.Channels[id] = slack.ChannelConfig{RequireMention: cc.RequireMention}
		}
	}
	return sc
}
