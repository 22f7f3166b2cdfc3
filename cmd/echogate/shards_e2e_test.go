package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/channels/discord/discordtest"
)

// TestDiscordShardsAutoAcrossReplicas: with discord.shards: auto and two shards, two replicas
// on one PostgreSQL run one shard each (each identified once, on its own shard); when one is
// SIGKILLed the other takes its shard over within ~15 s of the kill.
func TestDiscordShardsAutoAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two gateway binaries for half a minute")
	}
	dbURL := testPostgres(t)
	srv := discordtest.NewServer(discordtest.Options{HeartbeatInterval: time.Second, SharedShard: true})
	t.Cleanup(srv.Close)
	fake := echoModel()
	t.Cleanup(fake.Close)
	vars := map[string]string{"DATABASE_URL": dbURL, "OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "k",
		"DISCORD_BOT_TOKEN": srv.Token(), "DISCORD_API_URL": srv.APIURL}
	cfg := writeConfig(t, "discord: {shard_count: 2, shards: auto}\n")
	a := startBinaryGateway(t, withDataDir(t, vars), cfg)
	b := startBinaryGateway(t, withDataDir(t, vars), cfg)

	shardsOf := func(g *e2eGateway) []string {
		_, body := readyz(t, g.base)
		var out []string
		for _, sh := range []string{"shard 0:", "shard 1:"} {
			if strings.Contains(body["discord"], sh) {
				out = append(out, strings.TrimSuffix(sh, ":"))
			}
		}
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(shardsOf(a)) != 1 || len(shardsOf(b)) != 1 || shardsOf(a)[0] == shardsOf(b)[0] {
		if time.Now().After(deadline) {
			t.Fatalf("replicas run %v and %v, want one shard each", shardsOf(a), shardsOf(b))
		}
		time.Sleep(200 * time.Millisecond) // polling two processes' readiness: nothing to wait on
	}
	t.Logf("replica A runs %v, replica B runs %v", shardsOf(a), shardsOf(b))

	a.kill()
	killed := time.Now()
	for len(shardsOf(b)) != 2 {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("30s after replica A died, B runs %v; want both shards", shardsOf(b))
		}
		time.Sleep(200 * time.Millisecond) // polling the survivor's readiness: nothing to wait on
	}
	took := time.Since(killed)
	t.Logf("replica B took replica A's shard over %s after the SIGKILL", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("takeover took %s, want within ~15s", took)
	}
	// Each start of a shard identified once on that shard: [0,2] and [1,2], then the takeover.
	count := map[[2]int]int{}
	for _, id := range srv.Identifies() {
		count[id.Shard]++
	}
	if count[[2]int{0, 2}] < 1 || count[[2]int{1, 2}] < 1 || count[[2]int{0, 1}] != 0 {
		t.Errorf("identifies by shard = %v, want shards 0 and 1 of 2 only", count)
	}
	if code, _ := readyz(t, b.base); code != http.StatusOK {
		t.Errorf("/readyz of the survivor = %d, want 200", code)
	}
}
