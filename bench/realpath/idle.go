package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// idleSettle is how long after ready (and, with platforms, after they connected) idle memory
// is read: past serve's start-up release (internal/memtrim's first quiet 5 s interval), which
// collects start-up's garbage and unmaps the executable's pages only start-up touched.
const idleSettle = 7 * time.Second

// idleWithPlatforms starts a gateway with the web chat, Slack (Socket Mode) and Discord (the
// gateway websocket) connected to the in-repo fakes, which run in this process and speak the
// platforms' wire protocols, and returns its idle memory once /readyz reports every channel
// connected and start-up garbage has been collected. It uses its own data directory, so the
// throughput scenarios' database figure is not affected.
func idleWithPlatforms(ctx context.Context, o gatewayOpts, settle time.Duration) (memParts, error) {
	slack := slacktest.New(slacktest.Options{})
	defer slack.Close()
	discord := discordtest.NewServer(discordtest.Options{HeartbeatInterval: 41250 * time.Millisecond})
	defer discord.Close()
	o.dataDir = filepath.Join(filepath.Dir(o.dataDir), "data-platforms")
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return memParts{}, err
	}
	o.logFile = filepath.Join(filepath.Dir(o.logFile), "gateway-platforms.log")
	o.args = nil
	o.extraEnv = append(o.extraEnv,
		"SLACK_BOT_TOKEN="+slack.BotToken(), "SLACK_APP_TOKEN="+slack.AppToken(), "SLACK_API_URL="+slack.APIURL(),
		"DISCORD_BOT_TOKEN="+discord.Token(), "DISCORD_API_URL="+discord.APIURL)
	gw, base, _, err := startGateway(ctx, o) // ready: /readyz is 200 only with every channel connected
	if err != nil {
		return memParts{}, fmt.Errorf("gateway with Slack and Discord: %w", err)
	}
	defer gw.stop()
	if slack.OpenConnections() != 1 {
		return memParts{}, fmt.Errorf("gateway with Slack and Discord: ready with %d Socket Mode connections, want 1", slack.OpenConnections())
	}
	time.Sleep(settle)
	return readMemParts(base, gw.pid())
}
