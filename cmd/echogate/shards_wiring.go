package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/slack"
	"github.com/echogate/echogate/internal/lease"
)

// discordChannel is the Discord channel of this process: the configured shard (the default,
// every replica on it), or with discord.shards: auto the shards this replica holds the lease of.
func (g *gateway) discordChannel(dcfg discord.Config) (channels.Channel, error) {
	if g.cfg.Discord.Shards != "auto" {
		return discord.New(dcfg, g.log)
	}
	leases, ok := g.store.(lease.Store)
	if !ok {
		return nil, fmt.Errorf("discord.shards: auto needs a store with leases (SQLite or PostgreSQL), not %s", g.backend)
	}
	sum := sha256.Sum256([]byte(dcfg.Token))
	return discord.NewShardSet(dcfg, discord.ShardConfig{
		Count:  dcfg.ShardCount,
		Owner:  leaseOwnerName(),
		Leases: leases,
		// One set of leases per bot, should two bots share the database.
		Prefix: "discord:" + hex.EncodeToString(sum[:4]) + ":",
	}, g.log)
}

// leaseOwnerName names this process in shared leases: replicaName and a random part (in a
// container every process may be pid 1 on a reused host name; a restarted process is a new
// owner, and its predecessor's leases expire by themselves).
func leaseOwnerName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return replicaName() + "/" + hex.EncodeToString(b[:])
}

// warnSlackSocketLimit warns when the replicas may open more Socket Mode connections than Slack
// allows one app (10): past it Slack refuses new connections, and a replica that reconnects
// after a drop may stay without one. The count of replicas is replicas.expected, a setting
// rather than a count of live replicas, because it is known before any replica connects and
// includes a rolling deploy's surge, when one more process runs than usual.
func (g *gateway) warnSlackSocketLimit() {
	if g.cfg.Slack.AppToken == "" {
		return
	}
	replicas, conns := max(1, g.cfg.Replicas.Expected), max(1, g.cfg.Slack.SocketConnections)
	if replicas*conns > slack.MaxSocketConnections {
		g.log.Warn(fmt.Sprintf("slack: replicas.expected %d × slack.socket_connections %d = %d connections, but Slack allows %d Socket Mode connections per app: "+
			"past it a replica may stay without one; lower slack.socket_connections, set replicas.expected to the real most (counting a deploy's surge), or use the Events API (slack.signing_secret, no app_token)",
			replicas, conns, replicas*conns, slack.MaxSocketConnections),
			"replicas", replicas, "socket_connections", conns)
	}
}
