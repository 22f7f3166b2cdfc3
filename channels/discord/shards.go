package discord

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echogate/echogate/internal/lease"
)

// Shards shared out between replicas (discord.shards: auto): each replica holds the shards it
// runs through leases in the gateway's store, one owner per shard. A replica renews its leases
// every TTL/3; a dead replica's leases expire after TTL and the others take its shards over. A
// replica takes a shard only while it runs fewer than its fair share (shards / live replicas,
// rounded up), and gives one back, one per round, while it runs more than that and another
// replica runs fewer (a replica that joined). Every new gateway session starts with an
// IDENTIFY, which Discord allows once per 5 s per bot (max_concurrency 1): a lease on the
// identify, held for IdentifyInterval by whoever identifies, paces them across all replicas.

// Defaults of ShardConfig.
const (
	DefaultShardLeaseTTL    = 6 * time.Second
	DefaultIdentifyInterval = 5 * time.Second
)

// ShardConfig configures the sharing of Count shards between replicas.
type ShardConfig struct {
	// Count is the bot's shard count (discord.shard_count); at least 1.
	Count int
	// Owner names this replica in the leases; unique per process (host, pid, random).
	Owner string
	// Leases is the store the replicas share. Required.
	Leases lease.Store
	// Prefix starts every lease name; one per bot sharing the database (default "discord:").
	Prefix string
	// TTL is how long a lease lasts without renewal (default 6s): a dead replica's shards are
	// taken over about TTL + TTL/3 after its last renewal.
	TTL time.Duration
	// IdentifyInterval is the time between two identifies of the bot, across replicas
	// (default 5s, Discord's rate for max_concurrency 1).
	IdentifyInterval time.Duration
	// Clock is the time source; default the system clock.
	Clock Clock
}

func (c ShardConfig) withDefaults() (ShardConfig, error) {
	switch {
	case c.Count < 1:
		return c, fmt.Errorf("discord: shards: shard_count %d: give the bot's shard count (at least 1)", c.Count)
	case c.Owner == "":
		return c, fmt.Errorf("discord: shards: no owner name for this replica")
	case c.Leases == nil:
		return c, fmt.Errorf("discord: shards: auto needs the store's leases")
	}
	if c.Prefix == "" {
		c.Prefix = "discord:"
	}
	if c.TTL <= 0 {
		c.TTL = DefaultShardLeaseTTL
	}
	if c.IdentifyInterval <= 0 {
		c.IdentifyInterval = DefaultIdentifyInterval
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	return c, nil
}

// shardAssigner decides, round by round, which shards this replica runs.
type shardAssigner struct {
	cfg   ShardConfig
	log   *slog.Logger
	owned map[int]bool
}

func newShardAssigner(cfg ShardConfig, log *slog.Logger) (*shardAssigner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &shardAssigner{cfg: cfg, log: log, owned: map[int]bool{}}, nil
}

func (a *shardAssigner) shardName(s int) string { return a.cfg.Prefix + "shard:" + strconv.Itoa(s) }

// step runs one round: renew this replica's membership and shards, give one back or take one,
// and return the shards it runs now, sorted. A store error ends the round early with the
// shards still held; one whose renewal failed is dropped (another replica may hold it soon).
func (a *shardAssigner) step(ctx context.Context) ([]int, error) {
	c := a.cfg
	now := c.Clock.Now()
	if _, err := c.Leases.Acquire(ctx, c.Prefix+"member:"+c.Owner, c.Owner, now, c.TTL); err != nil {
		return a.list(), fmt.Errorf("discord: shards: renew membership: %w", err)
	}
	for s := range a.owned {
		ok, err := c.Leases.Acquire(ctx, a.shardName(s), c.Owner, now, c.TTL)
		if err != nil || !ok {
			delete(a.owned, s)
			a.log.Warn("discord: shard lease lost; another replica takes it over", "shard", s, "err", err)
		}
	}
	holders, err := c.Leases.Holders(ctx, c.Prefix, now)
	if err != nil {
		return a.list(), fmt.Errorf("discord: shards: list leases: %w", err)
	}
	live, load, free := a.census(holders)
	fair := (c.Count + live - 1) / live
	least := c.Count / live
	switch {
	case len(free) == 0 && (len(a.owned) > fair || (len(a.owned) > least && slices.Min(load) < least)):
		// Another replica runs fewer than its share: hand over the highest shard, one at a
		// time and only once no shard waits to be taken (each handover is a gap of that
		// shard's events until the other replica identified).
		s := slices.Max(a.list())
		if err := c.Leases.Release(ctx, a.shardName(s), c.Owner); err != nil {
			return a.list(), fmt.Errorf("discord: shards: release shard %d: %w", s, err)
		}
		delete(a.owned, s)
		a.log.Info("discord: shard handed over to a replica with fewer", "shard", s, "replicas", live)
	case len(a.owned) < fair && len(free) > 0:
		if _, held := holders[c.Prefix+"identify"]; held {
			break // another identify within IdentifyInterval: next round
		}
		if ok, err := c.Leases.Acquire(ctx, c.Prefix+"identify", c.Owner, now, c.IdentifyInterval); err != nil || !ok {
			break
		}
		s := free[0]
		ok, err := c.Leases.Acquire(ctx, a.shardName(s), c.Owner, now, c.TTL)
		if err != nil {
			return a.list(), fmt.Errorf("discord: shards: take shard %d: %w", s, err)
		}
		if ok {
			a.owned[s] = true
			a.log.Info("discord: shard taken", "shard", s, "replicas", live)
		}
	}
	return a.list(), nil
}

// census reads the leases: the live replicas (members), how many shards each other live
// replica runs, and the shards nobody holds.
func (a *shardAssigner) census(holders map[string]string) (live int, load []int, free []int) {
	c := a.cfg
	count := map[string]int{c.Owner: 0}
	for name, owner := range holders {
		if strings.HasPrefix(name, c.Prefix+"member:") {
			count[owner] += 0
		}
	}
	for s := range c.Count {
		owner, held := holders[a.shardName(s)]
		switch {
		case a.owned[s]:
		case !held:
			free = append(free, s)
		default:
			count[owner]++
		}
	}
	for owner, n := range count {
		if owner != c.Owner {
			load = append(load, n)
		}
	}
	if len(load) == 0 {
		load = []int{c.Count} // alone: nobody to hand over to
	}
	return len(count), load, free
}

func (a *shardAssigner) list() []int {
	out := make([]int, 0, len(a.owned))
	for s := range a.owned {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// releaseAll gives every held lease up (a graceful stop: the others take over at once).
func (a *shardAssigner) releaseAll(ctx context.Context) {
	for s := range a.owned {
		_ = a.cfg.Leases.Release(ctx, a.shardName(s), a.cfg.Owner)
		delete(a.owned, s)
	}
	_ = a.cfg.Leases.Release(ctx, a.cfg.Prefix+"member:"+a.cfg.Owner, a.cfg.Owner)
}
