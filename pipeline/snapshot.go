package pipeline

import (
	"container/list"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// VersionedContext is a ContextProvider whose section is standing context of a person in a
// session (the user's long-term memories), not an answer to the new message. The pipeline
// renders it into the system prompt once per session and person and keeps it byte for byte,
// turn after turn, until ContextVersion changes (or snapshotTTL passes): the system prompt then
// stays a prefix the provider can cache. ContextVersion must be cheap (no I/O) and change
// whenever what the section shows may have. In a shared session (a thread several people reply
// in) each person has a frozen text of their own: the cache is keyed by session and user, so a
// version two people happen to share cannot hand one the other's memories.
// Providers without it (knowledge hits) are rendered per turn, after the history.
type VersionedContext interface {
	ContextProvider
	ContextVersion(q echogate.ContextQuery) uint64
}

const (
	// snapshotTTL bounds how long a frozen section is reused: it picks up changes that bypass
	// ContextVersion (another replica's writes). Provider prompt caches last minutes, so this
	// costs them nothing.
	snapshotTTL = time.Hour
	// snapshotCacheBytes bounds the frozen sections kept, least recently used out first.
	snapshotCacheBytes = 8 << 20
)

// snapKey names a frozen text: one per session and person (the qualified user id).
type snapKey struct {
	session echogate.SessionKey
	user    string
}

// snapshotCache holds the frozen standing-context text of each session and person.
type snapshotCache struct {
	mu    sync.Mutex
	m     map[snapKey]*list.Element
	lru   list.List // of *snapshot, most recent first
	bytes int
	limit int
}

type snapshot struct {
	key     snapKey
	text    string // the rendered sections, "" when there were none
	version uint64
	at      time.Time
}

func newSnapshotCache(limit int) *snapshotCache {
	return &snapshotCache{m: map[snapKey]*list.Element{}, limit: limit}
}

// get returns key's frozen text when it was rendered at version and is younger than the TTL.
func (c *snapshotCache) get(key snapKey, version uint64, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return "", false
	}
	s := el.Value.(*snapshot)
	if s.version != version || now.Sub(s.at) >= snapshotTTL {
		return "", false
	}
	c.lru.MoveToFront(el)
	return s.text, true
}

// put freezes key's text at version, evicting the least recently used over the byte limit.
func (c *snapshotCache) put(key snapKey, text string, version uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok {
		c.remove(el)
	}
	s := &snapshot{key: key, text: text, version: version, at: now}
	c.m[key] = c.lru.PushFront(s)
	c.bytes += s.size()
	for c.bytes > c.limit && c.lru.Len() > 1 {
		c.remove(c.lru.Back())
	}
}

func (c *snapshotCache) remove(el *list.Element) {
	s := c.lru.Remove(el).(*snapshot)
	delete(c.m, s.key)
	c.bytes -= s.size()
}

// size estimates the bytes an entry holds: its text, key and bookkeeping.
func (s *snapshot) size() int { return len(s.text) + len(s.key.session) + len(s.key.user) + 128 }
