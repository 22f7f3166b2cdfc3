package slack

import (
	"context"
	"time"
)

// nameQueue bounds the users waiting for a background users.info; past it a miss is not
// queued (the next event of that user queues it again).
const nameQueue = 64

// nameRetry is how long a user whose name users.info did not give (unknown user, missing
// users:read, Slack down) is not asked about again, so a failing lookup costs one call per
// user per nameRetry, not one per event.
const nameRetry = 10 * time.Minute

// cachedName returns user's display name when the channel knows it. On a miss it queues the
// user for a background users.info (nameWorker) and returns "": the event path never waits on
// Slack for a name.
func (c *Channel) cachedName(user string) string {
	if user == "" {
		return ""
	}
	if n, ok := c.names.Get(user); ok {
		return n
	}
	if until, ok := c.nameMiss.Get(user); ok && c.cfg.Clock.Now().Before(until) {
		return ""
	}
	if _, queued := c.pending.LoadOrStore(user, struct{}{}); queued {
		return ""
	}
	select {
	case c.nameq <- user:
	default:
		c.pending.Delete(user)
		c.log.Debug("slack name lookup not queued: queue full", "user", user)
	}
	return ""
}

// nameWorker resolves queued users one at a time until ctx ends (Run owns it). userName
// caches the name and tells Config.NameResolved.
func (c *Channel) nameWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case user := <-c.nameq:
			c.userName(ctx, user)
			if _, ok := c.names.Get(user); !ok {
				c.nameMiss.Add(user, c.cfg.Clock.Now().Add(nameRetry))
			}
			c.pending.Delete(user)
		}
	}
}
