package discord

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate/channels"
)

// ShardSet is the Discord channel of a replica sharing the bot's shards with others
// (discord.shards: auto): it runs a gateway connection for each shard it holds the lease of
// (shards.go), starting and stopping them as shards move between replicas. Sending, editing,
// reacting and the rest are REST calls any replica makes, through the embedded Channel, whose
// own gateway never connects.
type ShardSet struct {
	*Channel
	cfg    Config
	log    *slog.Logger
	assign *shardAssigner

	mu      sync.Mutex
	running map[int]*Channel // the shards this replica runs now
}

// NewShardSet validates cfg and sc and builds the set. It does no I/O.
func NewShardSet(cfg Config, sc ShardConfig, log *slog.Logger) (*ShardSet, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sc.Clock = cfg.Clock
	if sc.Clock == nil {
		sc.Clock = systemClock{}
	}
	assign, err := newShardAssigner(sc, log.With("channel", "discord"))
	if err != nil {
		return nil, err
	}
	cfg.ShardID, cfg.ShardCount = 0, sc.Count
	rest, err := New(cfg, log)
	if err != nil {
		return nil, err
	}
	return &ShardSet{Channel: rest, cfg: cfg, log: log, assign: assign, running: map[int]*Channel{}}, nil
}

// Run takes and gives back shards every TTL/3 until ctx ends, running a gateway connection for
// each shard held; it returns once they all stopped, after giving the leases up (the other
// replicas take the shards over at once).
func (s *ShardSet) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return fmt.Errorf("discord: run: %w", ErrNilSink)
	}
	runs := map[int]startedShard{}
	stop := func(sh int) {
		r := runs[sh]
		r.cancel()
		<-r.done
		delete(runs, sh)
		s.mu.Lock()
		delete(s.running, sh)
		s.mu.Unlock()
	}
	defer func() {
		for sh := range runs {
			stop(sh)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		s.assign.releaseAll(rctx)
	}()
	for {
		owned, err := s.assign.step(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("discord: shard leases", "err", err)
		}
		want := map[int]bool{}
		for _, sh := range owned {
			want[sh] = true
			if _, ok := runs[sh]; !ok {
				r, err := s.start(ctx, sh, sink)
				if err != nil {
					return err
				}
				runs[sh] = r
			}
		}
		for sh := range runs {
			if !want[sh] {
				stop(sh)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.assign.cfg.Clock.After(s.assign.cfg.TTL / 3):
		}
	}
}

// startedShard is a shard's gateway connection running: cancel ends it, done closes after.
type startedShard struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs shard sh's gateway connection (a Channel of its own: a Channel runs once) until
// its context ends.
func (s *ShardSet) start(ctx context.Context, sh int, sink channels.Sink) (startedShard, error) {
	cfg := s.cfg
	cfg.ShardID = sh
	ch, err := New(cfg, s.log)
	if err != nil {
		return startedShard{}, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.mu.Lock()
	s.running[sh] = ch
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := ch.Run(sctx, sink); err != nil && sctx.Err() == nil {
			s.log.Error("discord: shard stopped", "shard", sh, "err", err)
		}
	}()
	return startedShard{cancel, done}, nil
}

// Ready reports the shards this replica runs: ready when each of them is (a replica running
// none is ready: the others hold every shard).
func (s *ShardSet) Ready() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.running) == 0 {
		return true, fmt.Sprintf("no shard here (%d shards, held by other replicas)", s.cfg.ShardCount)
	}
	var parts []string
	ok := true
	for sh := range s.cfg.ShardCount {
		ch, runs := s.running[sh]
		if !runs {
			continue
		}
		r, d := ch.Ready()
		ok = ok && r
		parts = append(parts, fmt.Sprintf("shard %d: %s", sh, d))
	}
	return ok, strings.Join(parts, "; ")
}

// BotID returns the bot's user id once one of the shards got READY, else "".
func (s *ShardSet) BotID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.running {
		if id := ch.BotID(); id != "" {
			return id
		}
	}
	return ""
}
