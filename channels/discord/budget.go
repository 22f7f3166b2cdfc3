package discord

import (
	"context"
	"sync"
	"time"
)

// budget is the per-channel outbound budget: one token bucket per Discord channel id, shared by
// posts, edits and typing. Priority traffic (finals, approval prompts, notices) waits for a token;
// best-effort traffic (intermediate stream edits, typing refreshes) only takes a token when one is
// spare (above a reserve and with no priority caller waiting), so it never delays a final.
// Discord's own per-route buckets and 429s are handled below this, by discordgo's limiter and
// the retry logic of Channel.call; this budget keeps a burst from reaching them.
type budget struct {
	clock   Clock
	burst   float64
	refill  time.Duration // time to gain one token
	reserve float64       // tokens best-effort traffic must leave for priority traffic

	mu      sync.Mutex
	buckets map[string]*tokenBucket
}

type tokenBucket struct {
	tokens  float64
	last    time.Time
	waiters int
}

// maxBuckets bounds the bucket map; full idle buckets are dropped beyond it (a full bucket is the
// same as a new one).
const maxBuckets = 4096

func newBudget(clock Clock, burst int, refill time.Duration) *budget {
	reserve := 2.0
	if float64(burst) <= reserve {
		reserve = float64(burst) - 1
	}
	return &budget{clock: clock, burst: float64(burst), refill: refill, reserve: reserve, buckets: map[string]*tokenBucket{}}
}

// bucket returns the refilled bucket of ch. Call with b.mu held.
func (b *budget) bucket(ch string, now time.Time) *tokenBucket {
	tb, ok := b.buckets[ch]
	if !ok {
		if len(b.buckets) >= maxBuckets {
			for k, v := range b.buckets {
				b.refillLocked(v, now)
				if v.waiters == 0 && v.tokens >= b.burst {
					delete(b.buckets, k)
				}
			}
		}
		tb = &tokenBucket{tokens: b.burst, last: now}
		b.buckets[ch] = tb
		return tb
	}
	b.refillLocked(tb, now)
	return tb
}

func (b *budget) refillLocked(tb *tokenBucket, now time.Time) {
	if el := now.Sub(tb.last); el > 0 {
		tb.tokens += float64(el) / float64(b.refill)
		if tb.tokens > b.burst {
			tb.tokens = b.burst
		}
		tb.last = now
	}
}

// tryTake takes a token for best-effort traffic when one is spare. It never blocks.
func (b *budget) tryTake(ch string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	tb := b.bucket(ch, b.clock.Now())
	if tb.waiters > 0 || tb.tokens < 1+b.reserve {
		return false
	}
	tb.tokens--
	return true
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
		tb := b.bucket(ch, b.clock.Now())
		if tb.tokens >= 1 {
			tb.tokens--
			b.mu.Unlock()
			return nil
		}
		if !registered {
			tb.waiters++
			registered = true
		}
		need := time.Duration((1 - tb.tokens) * float64(b.refill))
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
