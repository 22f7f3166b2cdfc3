package storagetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/lease"
)

// RunLeases checks the lease.Store contract on two stores over one database (two replicas):
// a lease is held by one owner at a time; its owner renews it; another takes it only once it
// expired (at exactly the expiry: free) or was released; releasing a lease one does not hold
// changes nothing; Holders lists the unexpired leases under a prefix; of owners racing for a
// free lease exactly one wins; bad arguments and a cancelled context fail. Times are the
// caller's (an injected clock), so nothing waits.
func RunLeases(t *testing.T, open func(t *testing.T) (a, b lease.Store)) {
	t.Helper()
	a, b := open(t)
	u := uniq{prefix: "st-" + randomHex(t, 6) + "-"}
	l := leaseCase{
		a: a, b: b, ctx: context.Background(), u: u,
		name: u.key("discord:shard:0"),
		t0:   time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC),
		ttl:  10 * time.Second,
	}
	// Each step starts from the state the one before left: B holds name from handOver on.
	l.handOver(t)
	at := l.t0.Add(16 * time.Second)
	l.holders(t, at)
	l.release(t, at)
	l.race(t)
	l.badArguments(t)
}

// leaseCase is RunLeases' fixture: two stores over one database and the lease they share.
type leaseCase struct {
	a, b lease.Store
	ctx  context.Context
	u    uniq
	name string
	t0   time.Time
	ttl  time.Duration
}

// handOver: A takes the free lease and renews it, B is refused until the renewed expiry and
// takes it at exactly that instant, and A is refused after losing it.
func (l leaseCase) handOver(t *testing.T) {
	t.Helper()
	a, b, t0 := l.a, l.b, l.t0
	steps := []struct {
		what   string
		store  lease.Store
		owner  string
		at     time.Time
		wantOK bool
	}{
		{"free: A takes it", a, "A", t0, true},
		{"held: B is refused", b, "B", t0.Add(time.Second), false},
		{"A renews", a, "A", t0.Add(5 * time.Second), true},
		{"B before the renewed expiry", b, "B", t0.Add(14 * time.Second), false},
		{"B at the expiry", b, "B", t0.Add(15 * time.Second), true},
		{"A after losing it", a, "A", t0.Add(16 * time.Second), false},
	}
	for _, s := range steps {
		got, err := s.store.Acquire(l.ctx, l.name, s.owner, s.at, l.ttl)
		if err != nil || got != s.wantOK {
			t.Fatalf("%s: Acquire(%s, %s, %s) = %v, %v; want %v", s.what, l.name, s.owner, s.at.Format(time.TimeOnly), got, err, s.wantOK)
		}
	}
}

// holders: Holders lists the unexpired leases under the prefix, at and once one expired.
func (l leaseCase) holders(t *testing.T, at time.Time) {
	t.Helper()
	holders := func(when time.Time) map[string]string {
		t.Helper()
		h, err := l.a.Holders(l.ctx, l.u.prefix, when)
		if err != nil {
			t.Fatalf("Holders(%s) = %v", l.u.prefix, err)
		}
		return h
	}
	other := l.u.key("discord:shard:1")
	if ok, err := l.a.Acquire(l.ctx, other, "A", at, time.Second); !ok || err != nil {
		t.Fatalf("Acquire(%s) = %v, %v; want true", other, ok, err)
	}
	if h := holders(at); len(h) != 2 || h[l.name] != "B" || h[other] != "A" {
		t.Errorf("Holders at %s = %v, want %s: B and %s: A", at.Format(time.TimeOnly), h, l.name, other)
	}
	if h := holders(at.Add(time.Second)); len(h) != 1 || h[l.name] != "B" {
		t.Errorf("Holders once %s expired = %v, want only %s: B", other, h, l.name)
	}
}

// release: releasing someone else's lease changes nothing; the owner's release frees it at once.
func (l leaseCase) release(t *testing.T, at time.Time) {
	t.Helper()
	if err := l.a.Release(l.ctx, l.name, "A"); err != nil {
		t.Fatalf("Release by a non-owner = %v, want nil", err)
	}
	if ok, _ := l.a.Acquire(l.ctx, l.name, "A", at, l.ttl); ok {
		t.Fatalf("Acquire after a non-owner's release = true, want false: B still holds it")
	}
	if err := l.b.Release(l.ctx, l.name, "B"); err != nil {
		t.Fatalf("Release by its owner = %v", err)
	}
	if ok, err := l.a.Acquire(l.ctx, l.name, "A", at, l.ttl); !ok || err != nil {
		t.Fatalf("Acquire after the owner's release = %v, %v; want true", ok, err)
	}
}

// race: of owners racing for a free lease over both stores, exactly one wins.
func (l leaseCase) race(t *testing.T) {
	t.Helper()
	race := l.u.key("discord:identify")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		st := l.a
		if i%2 == 1 {
			st = l.b
		}
		wg.Go(func() {
			ok, err := st.Acquire(l.ctx, race, fmt.Sprintf("R%d", i), l.t0, l.ttl)
			if err != nil {
				t.Errorf("racing Acquire = %v", err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("owners racing for a free lease: %d won, want 1", won)
	}
}

// badArguments: an empty name or owner, a ttl not above zero and a cancelled context fail.
func (l leaseCase) badArguments(t *testing.T) {
	t.Helper()
	a, ctx, name, t0, ttl := l.a, l.ctx, l.name, l.t0, l.ttl
	for what, call := range map[string]func() error{
		"empty name":   func() error { _, err := a.Acquire(ctx, "", "A", t0, ttl); return err },
		"empty owner":  func() error { _, err := a.Acquire(ctx, name, "", t0, ttl); return err },
		"zero ttl":     func() error { _, err := a.Acquire(ctx, name, "A", t0, 0); return err },
		"negative ttl": func() error { _, err := a.Acquire(ctx, name, "A", t0, -time.Second); return err },
	} {
		if call() == nil {
			t.Errorf("Acquire with %s = nil error, want one", what)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.Acquire(cctx, name, "A", t0, ttl); err == nil {
		t.Error("Acquire with a cancelled context = nil error, want one")
	}
	if _, err := a.Holders(cctx, l.u.prefix, t0); err == nil {
		t.Error("Holders with a cancelled context = nil error, want one")
	}
}
