package slack

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// priority orders calls competing for one channel's budget.
type priority uint8

const (
	prioLow  priority = iota // stream updates, progress indicators: skipped when the budget is short
	prioHigh                 // final replies, approval prompts, notices: wait for a slot
)

// budgets holds one token bucket (golang.org/x/time/rate, read at the channel clock's time) per
// Slack channel. There is deliberately no global limiter: a busy channel never slows another.
type budgets struct {
	clock Clock
	rate  float64
	burst float64

	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	lim          *rate.Limiter // always called with times from budgets.clock, under budgets.mu
	blockedUntil time.Time     // set from a 429's Retry-After
	highWaiting  int
}

const maxBuckets = 4096

func newBudgets(clock Clock, rate float64, burst int) *budgets {
	return &budgets{clock: clock, rate: rate, burst: float64(burst), m: map[string]*bucket{}}
}

// get returns ch's bucket, a full one if ch has none. Called with b.mu held.
func (b *budgets) get(ch string, now time.Time) *bucket {
	bk, ok := b.m[ch]
	if !ok {
		if len(b.m) >= maxBuckets {
			b.evictIdle(now)
		}
		bk = &bucket{lim: rate.NewLimiter(rate.Limit(b.rate), int(b.burst))}
		b.m[ch] = bk
	}
	return bk
}

// evictIdle drops buckets that are full, unblocked and unwaited: forgetting them changes nothing.
func (b *budgets) evictIdle(now time.Time) {
	for k, bk := range b.m {
		full := bk.lim.TokensAt(now) >= b.burst
		if full && bk.highWaiting == 0 && !now.Before(bk.blockedUntil) {
			delete(b.m, k)
		}
	}
}

// tryLow takes a token for a low-priority call if one is free without touching the token kept
// for finals, and no high-priority call is waiting. It never blocks.
func (b *budgets) tryLow(ch string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	bk := b.get(ch, now)
	if now.Before(bk.blockedUntil) || bk.highWaiting > 0 || bk.lim.TokensAt(now) < 2 {
		return false
	}
	return bk.lim.AllowN(now, 1)
}

// waitHigh blocks until a token for ch is free (or the channel's Retry-After block ends) and
// takes it. It returns ctx.Err() when ctx ends first.
func (b *budgets) waitHigh(ctx context.Context, ch string) error {
	b.mu.Lock()
	registered := false
	defer func() {
		if registered {
			b.mu.Lock()
			b.m[ch].highWaiting--
			b.mu.Unlock()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			b.mu.Unlock()
			return err
		}
		now := b.clock.Now()
		bk := b.get(ch, now)
		var wait time.Duration
		switch {
		case now.Before(bk.blockedUntil):
			wait = bk.blockedUntil.Sub(now)
		case bk.lim.AllowN(now, 1):
			b.mu.Unlock()
			return nil
		default:
			wait = time.Duration((1 - bk.lim.TokensAt(now)) / b.rate * float64(time.Second))
		}
		if !registered {
			bk.highWaiting++
			registered = true
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.clock.After(wait):
		}
		b.mu.Lock()
	}
}

// block stops every call to ch until now+d (a 429's Retry-After).
func (b *budgets) block(ch string, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	bk := b.get(ch, now)
	if until := now.Add(d); until.After(bk.blockedUntil) {
		bk.blockedUntil = until
	}
}

// blockedFor reports how long ch is still blocked by a Retry-After.
func (b *budgets) blockedFor(ch string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	bk := b.get(ch, now)
	if now.Before(bk.blockedUntil) {
		return bk.blockedUntil.Sub(now)
	}
	return 0
}
