package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

// claimTable is one store shared by replicas, over a MemStore, as PostgreSQL is: a session lock
// at most one replica holds, and event claims replicas take over (ReclaimEvent) and renew
// (RenewClaims). Each replica reaches it through its own replicaView.
type claimTable struct {
	mem     *pipelinetest.MemStore
	changed chan struct{} // pulsed on every sweep, takeover and renewal

	mu        sync.Mutex
	claimed   map[string]time.Time           // claim times moved by takeovers and renewals
	locks     map[echogate.SessionKey]string // session → the replica holding its lock
	reclaims  map[string][]string            // replica → the events it took over
	renewedAt map[string]time.Time           // replica → the clock of its last renewal
	sweeps    map[string]int                 // replica → its UnfinishedEvents calls
}

func newClaimTable() *claimTable {
	return &claimTable{mem: pipelinetest.NewMemStore(), changed: make(chan struct{}, 1),
		claimed: map[string]time.Time{}, locks: map[echogate.SessionKey]string{},
		reclaims: map[string][]string{}, renewedAt: map[string]time.Time{}, sweeps: map[string]int{}}
}

func (c *claimTable) pulse() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond (called under c.mu) holds, for at most 10 s; it reports whether it did.
func (c *claimTable) waitFor(cond func() bool) bool {
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-c.changed:
		case <-deadline:
			return false
		}
	}
}

// unfinished returns the unfinished events with their claim times (c.mu held).
func (c *claimTable) unfinished(ctx context.Context) (map[string]echogate.ClaimedEvent, error) {
	evs, err := c.mem.UnfinishedEvents(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 0)
	if err != nil {
		return nil, err
	}
	out := make(map[string]echogate.ClaimedEvent, len(evs))
	for _, ev := range evs {
		if at, ok := c.claimed[ev.Key]; ok {
			ev.ClaimedAt = at
		}
		out[ev.Key] = ev
	}
	return out, nil
}

func (c *claimTable) takenOver() []string {
	var all []string
	for name, keys := range c.reclaims {
		all = append(all, name+":"+strings.Join(keys, ","))
	}
	sort.Strings(all)
	return all
}

// replicaView is one replica's connection to a claimTable. Killed, every call fails and the
// replica's session locks are gone, as when a process dies with its connections.
type replicaView struct {
	pipeline.Store
	c    *claimTable
	name string
	dead atomic.Bool
}

var errDead = errors.New("replica is dead")

func (c *claimTable) view(name string) *replicaView {
	return &replicaView{Store: c.mem, c: c, name: name}
}

func (v *replicaView) kill() {
	v.dead.Store(true)
	v.c.mu.Lock()
	for k, owner := range v.c.locks {
		if owner == v.name {
			delete(v.c.locks, k)
		}
	}
	v.c.mu.Unlock()
}

func (v *replicaView) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.Deferred(ctx, b, turnstart.Blocking(v), turnstart.DefaultDelay)
}

func (v *replicaView) TryLockSession(ctx context.Context, key echogate.SessionKey) (func(), bool, error) {
	unlock, ok, _, _, err := v.TryLockSessionPending(ctx, key, "")
	return unlock, ok, err
}

func (v *replicaView) TryLockSessionPending(ctx context.Context, key echogate.SessionKey, event string) (func(), bool, *echogate.PendingTurn, bool, error) {
	if v.dead.Load() {
		return nil, false, nil, false, errDead
	}
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	if owner, held := v.c.locks[key]; held && owner != v.name {
		return nil, false, nil, false, nil
	}
	v.c.locks[key] = v.name
	unlock := func() {
		v.c.mu.Lock()
		if v.c.locks[key] == v.name {
			delete(v.c.locks, key)
		}
		v.c.mu.Unlock()
	}
	un, err := v.c.unfinished(ctx)
	if err != nil {
		delete(v.c.locks, key)
		return nil, false, nil, false, err
	}
	_, open := un[event]
	done := event != "" && !open
	p, err := v.c.mem.GetPending(ctx, key)
	switch {
	case errors.Is(err, echogate.ErrNotFound):
		return unlock, true, nil, done, nil
	case err != nil:
		delete(v.c.locks, key)
		return nil, false, nil, false, err
	}
	return unlock, true, &p, done, nil
}

func (v *replicaView) UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error) {
	if v.dead.Load() {
		return nil, errDead
	}
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	v.c.sweeps[v.name]++
	v.c.pulse()
	un, err := v.c.unfinished(ctx)
	if err != nil {
		return nil, err
	}
	return pipelinetest.ClaimedBefore(slices.Collect(maps.Values(un)), before, limit), nil
}

func (v *replicaView) ReclaimEvent(ctx context.Context, key string, staleBefore, now time.Time) (bool, error) {
	if v.dead.Load() {
		return false, errDead
	}
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	un, err := v.c.unfinished(ctx)
	if err != nil {
		return false, err
	}
	ev, open := un[key]
	if !open || !ev.ClaimedAt.Before(staleBefore) {
		return false, nil
	}
	v.c.claimed[key] = now
	v.c.reclaims[v.name] = append(v.c.reclaims[v.name], key)
	v.c.pulse()
	return true, nil
}

// RenewClaims stamps the i-th of n unfinished keys now − (n−1−i) µs, as PostgreSQL does.
func (v *replicaView) RenewClaims(ctx context.Context, keys []string, now time.Time) (int64, error) {
	if v.dead.Load() {
		return 0, errDead
	}
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	un, err := v.c.unfinished(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for i, k := range keys {
		if _, open := un[k]; open {
			v.c.claimed[k] = now.Add(-time.Duration(len(keys)-1-i) * time.Microsecond)
			n++
		}
	}
	v.c.renewedAt[v.name] = now
	v.c.pulse()
	return n, nil
}

func (v *replicaView) CompleteEvent(ctx context.Context, key string, at time.Time) error {
	if v.dead.Load() {
		return errDead
	}
	return v.c.mem.CompleteEvent(ctx, key, at)
}

func (v *replicaView) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	if v.dead.Load() {
		return errDead
	}
	return v.c.mem.FinishTurn(ctx, end)
}

func (v *replicaView) AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error {
	if v.dead.Load() {
		return errDead
	}
	return v.c.mem.AppendMessages(ctx, key, turn, msgs, at)
}

func (v *replicaView) UpdateTurn(ctx context.Context, t echogate.TurnRecord) error {
	if v.dead.Load() {
		return errDead
	}
	return v.c.mem.UpdateTurn(ctx, t)
}

// sharedClock is the clock every replica of a test reads.
type sharedClock struct{ now atomic.Pointer[time.Time] }

func newSharedClock() *sharedClock {
	c := &sharedClock{}
	t := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	c.now.Store(&t)
	return c
}

func (c *sharedClock) Now() time.Time { return *c.now.Load() }

func (c *sharedClock) advance(d time.Duration) time.Time {
	t := c.Now().Add(d)
	c.now.Store(&t)
	return t
}

const testReplayAfter = time.Minute

// startReplica runs one replica on the view: agent.replay_after a minute of the shared clock,
// its janitor and claim renewal every 2 ms of real time.
func startReplica(t *testing.T, v *replicaView, clock *sharedClock, steps ...agenttest.Step) *harness {
	t.Helper()
	return startReplicaDraining(t, v, clock, time.Millisecond, steps...)
}

// startReplicaDraining is startReplica with agent.drain_timeout drain (real time).
func startReplicaDraining(t *testing.T, v *replicaView, clock *sharedClock, drain time.Duration, steps ...agenttest.Step) *harness {
	t.Helper()
	return start(t, opts{
		cfg:   pipeline.Config{Now: clock.Now, ReplayAfter: testReplayAfter, JanitorInterval: 2 * time.Millisecond, DrainTimeout: drain},
		store: v.c.mem,
		deps:  func(d *pipeline.Deps) { d.Store = v },
		made:  func(p *pipeline.Pipeline) { pipeline.SetClaimRenewEvery(p, 2*time.Millisecond) },
	}, steps...)
}

// stepClock advances the shared clock by d and waits until replica name renewed its claims at the
// new time (or something was taken over). It reports whether the renewal came.
func stepClock(t *testing.T, c *claimTable, clock *sharedClock, d time.Duration, name string) bool {
	t.Helper()
	now := clock.advance(d)
	return c.waitFor(func() bool { return !c.renewedAt[name].Before(now) || len(c.reclaims) > 0 })
}

// sweptSince waits until replica name's janitor completed a whole sweep that read the clock after
// this call began.
func sweptSince(t *testing.T, c *claimTable, name string) {
	t.Helper()
	c.mu.Lock()
	n0 := c.sweeps[name]
	c.mu.Unlock()
	if !c.waitFor(func() bool { return c.sweeps[name] >= n0+3 }) {
		t.Fatalf("replica %s's janitor made no sweep within 10s", name)
	}
}

// orderedMsg is a message whose event key sorts before the keys of earlier ones (the order of
// arrival is then not the order of the keys).
func orderedMsg(n int, text string) echogate.InboundEvent {
	ev := msg("renew", "ann", text)
	ev.ID = fmt.Sprintf("%c-%s", 'z'-n, ev.ID)
	return ev
}
