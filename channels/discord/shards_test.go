package discord

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// memLeases is lease.Store in memory, with the stores' semantics (storagetest.RunLeases).
type memLeases struct {
	mu     sync.Mutex
	leases map[string]memLease
}

type memLease struct {
	owner string
	until time.Time
}

func (m *memLeases) Acquire(_ context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.leases[name]; ok && l.owner != owner && now.Before(l.until) {
		return false, nil
	}
	m.leases[name] = memLease{owner, now.Add(ttl)}
	return true, nil
}

func (m *memLeases) Release(_ context.Context, name, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases[name].owner == owner {
		delete(m.leases, name)
	}
	return nil
}

func (m *memLeases) Holders(_ context.Context, prefix string, now time.Time) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for name, l := range m.leases {
		if strings.HasPrefix(name, prefix) && now.Before(l.until) {
			out[name] = l.owner
		}
	}
	return out, nil
}

// stepClock is a clock the test moves.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time                       { return c.now }
func (c *stepClock) After(time.Duration) <-chan time.Time { return nil }

// shardSim runs replicas' assigners round by round (every TTL/3, as Run does) on one store.
type shardSim struct {
	t        *testing.T
	clock    *stepClock
	store    *memLeases
	count    int
	replicas map[string]*shardAssigner
	owned    map[string][]int
	identify []time.Time // when any replica started a shard (an IDENTIFY)
}

func newShardSim(t *testing.T, count int) *shardSim {
	return &shardSim{t: t, clock: &stepClock{now: time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC)}, store: &memLeases{leases: map[string]memLease{}},
		count: count, replicas: map[string]*shardAssigner{}, owned: map[string][]int{}}
}

func (s *shardSim) join(owner string) {
	a, err := newShardAssigner(ShardConfig{Count: s.count, Owner: owner, Leases: s.store, Clock: s.clock}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.replicas[owner] = a
}

// round advances the clock by TTL/3 and steps every live replica; it fails the test when two
// replicas run one shard.
func (s *shardSim) round() {
	s.clock.now = s.clock.now.Add(DefaultShardLeaseTTL / 3)
	runner := map[int]string{}
	for owner, a := range s.replicas {
		got, err := a.step(context.Background())
		if err != nil {
			s.t.Fatalf("%s: step = %v", owner, err)
		}
		for _, sh := range got {
			if !contains(s.owned[owner], sh) {
				s.identify = append(s.identify, s.clock.now)
			}
			if other, dup := runner[sh]; dup {
				s.t.Fatalf("at %s shard %d runs on %s and %s", s.clock.now.Format(time.TimeOnly), sh, other, owner)
			}
			runner[sh] = owner
		}
		s.owned[owner] = got
	}
}

func contains(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// until runs rounds until cond holds, at most limit of simulated time; it returns the time taken.
func (s *shardSim) until(what string, limit time.Duration, cond func() bool) time.Duration {
	s.t.Helper()
	start := s.clock.now
	for !cond() {
		if s.clock.now.Sub(start) > limit {
			s.t.Fatalf("%s: not within %s of simulated time; owned %v", what, limit, s.owned)
		}
		s.round()
	}
	return s.clock.now.Sub(start)
}

func (s *shardSim) balanced(want ...int) bool {
	var got []int
	total := 0
	for owner := range s.replicas {
		got = append(got, len(s.owned[owner]))
		total += len(s.owned[owner])
	}
	return total == s.count && fmt.Sprint(sortInts(got)) == fmt.Sprint(sortInts(want))
}

func sortInts(x []int) []int {
	out := append([]int(nil), x...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestShardsSharedOutByLeases: one replica alone takes every shard; two more join and the
// shards are handed over until each runs its share; one dies and the others take its shards
// over within 15 s of its last renewal. No shard ever runs on two replicas, and no two
// identifies (shard starts) are closer than the identify interval, across replicas.
func TestShardsSharedOutByLeases(t *testing.T) {
	s := newShardSim(t, 6)
	s.join("A")
	s.until("A alone takes the 6 shards", 2*time.Minute, func() bool { return s.balanced(6) })
	s.join("B")
	s.join("C")
	s.until("three replicas share 6 shards 2, 2, 2", 3*time.Minute, func() bool { return s.balanced(2, 2, 2) })

	lost := s.owned["B"]
	delete(s.replicas, "B") // SIGKILL: B renews nothing from now on
	delete(s.owned, "B")
	took := s.until("A and C take B's shards over", time.Minute, func() bool { return s.balanced(3, 3) })
	if took > 15*time.Second {
		t.Errorf("B's shards %v taken over %s after its last renewal, want within 15s", lost, took)
	}
	t.Logf("a dead replica's 2 shards were taken over %s after its last renewal (lease ttl %s, identifies %s apart)", took, DefaultShardLeaseTTL, DefaultIdentifyInterval)
	for i := 1; i < len(s.identify); i++ {
		if gap := s.identify[i].Sub(s.identify[i-1]); gap < DefaultIdentifyInterval {
			t.Errorf("identifies %d and %d are %s apart, want at least %s", i-1, i, gap, DefaultIdentifyInterval)
		}
	}
}

// TestShardConfigErrors: a bad shard configuration is refused naming what to fix.
func TestShardConfigErrors(t *testing.T) {
	store := &memLeases{leases: map[string]memLease{}}
	for name, tt := range map[string]struct {
		cfg  ShardConfig
		want string
	}{
		"no shards": {ShardConfig{Owner: "A", Leases: store}, "shard_count 0"},
		"no owner":  {ShardConfig{Count: 2, Leases: store}, "no owner"},
		"no leases": {ShardConfig{Count: 2, Owner: "A"}, "needs the store's leases"},
	} {
		if _, err := newShardAssigner(tt.cfg, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: newShardAssigner = %v, want an error naming %q", name, err, tt.want)
		}
	}
}
