package discord

import (
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
)

// kindCache remembers whether channels are threads (bounded; the oldest are forgotten first).
type kindCache struct {
	mu   sync.Mutex
	max  int
	m    map[string]bool
	ring []string
	next int
}

// newKindCache makes a cache of at most max channels; like idSet, its ring grows to the bound.
func newKindCache(max int) *kindCache {
	return &kindCache{max: max, m: map[string]bool{}}
}

func (k *kindCache) get(id string) (thread, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	thread, ok = k.m[id]
	return thread, ok
}

func (k *kindCache) add(id string, thread bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.m[id]; !ok {
		if len(k.ring) < k.max {
			k.ring = append(k.ring, id)
		} else {
			delete(k.m, k.ring[k.next])
			k.ring[k.next] = id
			k.next = (k.next + 1) % k.max
		}
	}
	k.m[id] = thread
}

// needsRead reports whether threadContext would call Discord for m: a guild channel whose
// kind is unknown, or a thread whose history was not read yet.
func (c *Channel) needsRead(m *discordgo.Message) bool {
	if c.cfg.ThreadHistory < 0 || m.GuildID == "" || c.threadsSeen.has(m.ChannelID) {
		return false
	}
	thread, known := c.threadKinds.get(m.ChannelID)
	return !known || thread
}

// threadContext gives a message addressed to the bot what came before it: the message it
// replies to, and, the first time the bot is addressed in a thread it has not posted in (and
// mayRead), the thread's recent messages (up to ThreadHistory, oldest first). The reads run
// in the channel's lane, off the gateway reader (lanes.go), bounded by RequestTimeout per
// call; the channel kind and the thread read happen once per thread.
func (c *Channel) threadContext(m *discordgo.Message, botID string, mayRead bool) []echogate.ThreadMessage {
	if c.cfg.ThreadHistory < 0 {
		return nil
	}
	var out []echogate.ThreadMessage
	if r := m.ReferencedMessage; r != nil && r.Author != nil && r.Author.ID != botID {
		if text := cleanContent(r, botID); text != "" {
			out = append(out, echogate.ThreadMessage{Author: displayName(r.Author), AuthorID: r.Author.ID, Text: text, IsBot: r.Author.Bot})
		}
	}
	if !mayRead || m.GuildID == "" || c.threadsSeen.has(m.ChannelID) {
		return out
	}
	ctx := c.context()
	thread, known := c.threadKinds.get(m.ChannelID)
	if !known {
		var ch *discordgo.Channel
		err := c.call(ctx, "get channel "+m.ChannelID, false, func(opts ...discordgo.RequestOption) error {
			var err error
			ch, err = c.sess.Channel(m.ChannelID, opts...)
			return err
		})
		if err != nil {
			c.log.Debug("discord: channel kind unknown; no thread context", "err", err, "channel_id", m.ChannelID)
			return out
		}
		thread = ch.IsThread()
		c.threadKinds.add(m.ChannelID, thread)
	}
	if !thread {
		return out
	}
	c.threadsSeen.add(m.ChannelID)
	var msgs []*discordgo.Message
	err := c.call(ctx, "read thread "+m.ChannelID, false, func(opts ...discordgo.RequestOption) error {
		var err error
		msgs, err = c.sess.ChannelMessages(m.ChannelID, min(c.cfg.ThreadHistory, 100), m.ID, "", "", opts...)
		return err
	})
	if err != nil {
		c.log.Warn("discord: thread context not read", "err", err, "channel_id", m.ChannelID)
		return out
	}
	var earlier []echogate.ThreadMessage
	for i := len(msgs) - 1; i >= 0; i-- { // Discord answers newest first
		h := msgs[i]
		if h == nil || h.Author == nil {
			continue
		}
		if h.Author.ID == botID {
			return out // the bot is in the thread: the store has what was said with it
		}
		if m.ReferencedMessage != nil && h.ID == m.ReferencedMessage.ID {
			continue // already the first entry
		}
		if text := cleanContent(h, botID); text != "" {
			earlier = append(earlier, echogate.ThreadMessage{Author: displayName(h.Author), AuthorID: h.Author.ID, Text: text, IsBot: h.Author.Bot})
		}
	}
	return append(earlier, out...)
}

func displayName(u *discordgo.User) string {
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}
