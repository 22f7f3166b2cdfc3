package discord

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// budget is the per-channel outbound budget: one token bucket per Discord channel id, shared by
// posts, edits and typing. Priority traffic (finals, approval prompts, notices) waits for a token;
// best-effort traffic (intermediate stream edits, typing refreshes) only takes a token when one is
// spare (above a reserve and with no priority caller waiting), so it never delays a final.
// Discord's own per-route buckets and 429s are handled below this, by discordgo's limiter and
// the retry logic of Channel.call; this budget keeps a burst from reaching them. The buckets are
// golang.org/x/time/rate limiters, always read at the channel clock's time.
type budget struct {
	clock   Clock
	burst   float64
	refill  time.Duration // time to gain one token
	reserve float64       // tokens best-effort traffic must leave for priority traffic

	mu      sync.Mutex
	buckets map[string]*tokenBucket
}

type tokenBucket struct {
	lim     *rate.Limiter // called under budget.mu with times from budget.clock
	waiters int
}

// maxBuckets bounds the bucket map; full idle buckets are dropped beyond it (a full bucket is the
// same as a new one).
const maxBuckets = 4096

// tokenSlack absorbs float64 rounding in the limiter's count: rate.Every(refill) is 1/refill per
// second, and after exactly one refill period about one period in eight (measured over 1ms…5s)
// reads 0.99999999999999989 tokens. AllowN grants such a token (its deficit rounds to 0ns); the
// threshold checks here do the same with this slack (far below a nanosecond of refill).
const tokenSlack = 1e-12

func newBudget(clock Clock, burst int, refill time.Duration) *budget {
	reserve := 2.0
	if float64(burst) <= reserve {
		reserve = float64(burst) - 1
	}
	return &budget{clock: clock, burst: float64(burst), refill: refill, reserve: reserve, buckets: map[string]*tokenBucket{}}
}

// bucket returns the bucket of ch, a full one if ch has none. Call with b.mu held.
func (b *budget) bucket(ch string, now time.Time) *tokenBucket {
	tb, ok := b.buckets[ch]
	if !ok {
		if len(b.buckets) >= maxBuckets {
			for k, v := range b.buckets {
				if v.waiters == 0 && v.lim.TokensAt(now)+tokenSlack >= b.burst {
					delete(b.buckets, k)
				}
			}
		}
		tb = &tokenBucket{lim: rate.NewLimiter(rate.Every(b.refill), int(b.burst))}
		b.buckets[ch] = tb
	}
	return tb
}

// tryTake takes a token for best-effort traffic when one is spare. It never blocks.
func (b *budget) tryTake(ch string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	tb := b.bucket(ch, now)
	if tb.waiters > 0 || tb.lim.TokensAt(now)+tokenSlack < 1+b.reserve {
		return false
	}
	return tb.lim.AllowN(now, 1)
}

// wait takes a token for priority traffic, blocking until one is available or ctx ends (then it
// returns ctx's error and takes nothing).
func (b *budget) wait(ctx context.Context, ch string) error {
	registered := false
	defer func() {
		if registered {
			b.mu.Lock()
			if tb, ok := b.buckets[ch]; ok {
				tb.waiters--
			}
			b.mu.Unlock()
		}
	}()
	for {
		b.mu.Lock()
		now := b.clock.Now()
		tb := b.bucket(ch, now)
		if tb.lim.AllowN(now, 1) {
			b.mu.Unlock()
			return nil
		}
		tokens := tb.lim.TokensAt(now)
		if !registered {
			tb.waiters++
			registered = true
		}
		need := time.Duration((1 - tokens) * float64(b.refill))
		b.mu.Unlock()
		if need < time.Millisecond {
			need = time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.clock.After(need):
		}
	}
}
