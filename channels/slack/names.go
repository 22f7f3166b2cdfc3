package slack

import "context"

// nameQueue bounds the users waiting for a background users.info; past it a miss is not
// queued (the next event of that user queues it again).
const nameQueue = 64

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
			c.pending.Delete(user)
		}
	}
}
