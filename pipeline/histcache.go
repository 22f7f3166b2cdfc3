package pipeline

import (
	"container/list"
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
)

// historyCache keeps the recent transcript of active sessions between turns: the last
// Config.HistoryMessages entries (or all, when there are fewer). A turn then asks the store
// only for what was appended after the newest cached entry, usually its predecessor's few
// messages, instead of reading and decoding the whole window again; at 1000 sessions that
// was a fifth of the gateway's CPU (bench/turns).
//
// Entries are never trusted blindly: every use goes through Store.HistorySince, which checks
// that the newest cached entry is still in the store (same seq, turn and time). A transcript
// changed elsewhere (a deleted session, perhaps started again, or one that another replica
// appended more to than the window holds) is reloaded with History, never served stale.
//
// Bounded by bytes (an estimate of the messages' size), least recently used first out; 16
// shards, each with its own lock and budget, so sessions never contend on one lock. Idle
// sessions' entries are released (sweep): the cache serves a conversation's consecutive
// turns, and a session that went quiet is read from the store again when it comes back.
type historyCache struct {
	seed   maphash.Seed
	window int // entries kept per session
	epoch  atomic.Uint64
	shards [histShards]histShard
	// owners: who requested the transcript's turns (history_people.go). Kept apart from the
	// entries: a turn's requester never changes, whatever happens to the cached transcript.
	owners turnOwners
}

const (
	histShards = 16
	// histCacheBytes bounds the cache (all shards): a few thousand active sessions of
	// ordinary chat. Larger transcripts fall out first by recency, then are read whole again.
	histCacheBytes = 16 << 20
)

type histShard struct {
	mu    sync.Mutex
	m     map[echogate.SessionKey]*list.Element
	lru   list.List // of *histEntry, most recent first
	bytes int
}

type histEntry struct {
	key   echogate.SessionKey
	msgs  []echogate.StoredMessage // elements never modified; appended to in place (extend)
	bytes int
	used  uint64 // the cache's epoch when the entry was last read or written
	// complete: msgs ends with the entries of the session's last turn, added by it after its
	// end was written (writeThrough), so no store read is needed to continue it.
	complete bool
}

func newHistoryCache(window int) *historyCache {
	c := &historyCache{seed: maphash.MakeSeed(), window: window}
	for i := range c.shards {
		c.shards[i].m = make(map[echogate.SessionKey]*list.Element)
	}
	return c
}

func (c *historyCache) shard(key echogate.SessionKey) *histShard {
	return &c.shards[maphash.String(c.seed, string(key))%histShards]
}

// get returns the cached entries of key (nil when none). The slice is the cache's own: callers
// must not modify its elements (the turn only reads its history, see history).
func (c *historyCache) get(key echogate.SessionKey) []echogate.StoredMessage {
	msgs, _ := c.lookup(key)
	return msgs
}

// lookup is get, also telling whether the entry is complete (histEntry).
func (c *historyCache) lookup(key echogate.SessionKey) (msgs []echogate.StoredMessage, complete bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.m[key]
	if !ok {
		return nil, false
	}
	sh.lru.MoveToFront(el)
	e := el.Value.(*histEntry)
	e.used = c.epoch.Load()
	return e.msgs[:len(e.msgs):len(e.msgs)], e.complete // the room after it is extend's
}

// sweep drops the entries that were neither read nor written since the previous sweep and
// returns how many. Called every interval d, it releases a session's entry d to 2d after its
// last turn. Entries are ordered by use within a shard, so a sweep visits only what it drops
// (and one more per shard).
func (c *historyCache) sweep() int {
	prev := c.epoch.Add(1) - 1
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for el := sh.lru.Back(); el != nil; el = sh.lru.Back() {
			e := el.Value.(*histEntry)
			if e.used >= prev {
				break
			}
			sh.lru.Remove(el)
			delete(sh.m, e.key)
			sh.bytes -= e.bytes
			n++
		}
		sh.mu.Unlock()
	}
	return n
}

// len returns the number of cached sessions.
func (c *historyCache) len() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += len(c.shards[i].m)
		c.shards[i].mu.Unlock()
	}
	return n
}

// put replaces key's entries with the last c.window of msgs, then evicts the least recently
// used sessions of the shard while it is over its share of histCacheBytes. msgs must not be
// modified afterwards. An empty transcript is not cached: there is nothing to anchor on.
func (c *historyCache) put(key echogate.SessionKey, msgs []echogate.StoredMessage) {
	if len(msgs) > c.window {
		msgs = msgs[len(msgs)-c.window:]
	}
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c.putLocked(sh, key, msgs, false)
}

// putLocked is put with sh (key's shard) locked and msgs already cut to the window.
func (c *historyCache) putLocked(sh *histShard, key echogate.SessionKey, msgs []echogate.StoredMessage, complete bool) {
	// The room after the entries counts too (extend): an entry's struct each; and the
	// session's own entry in the cache.
	bytes := histEntryOverhead + storedSize(msgs) + storedEntrySize*(cap(msgs)-len(msgs))
	el, ok := sh.m[key]
	if ok {
		sh.bytes -= el.Value.(*histEntry).bytes
	}
	if len(msgs) == 0 || bytes > histCacheBytes/histShards {
		// Nothing to anchor on, or one transcript larger than a shard's budget: read it each time.
		if ok {
			sh.lru.Remove(el)
			delete(sh.m, key)
		}
		return
	}
	if ok {
		e := el.Value.(*histEntry)
		e.msgs, e.bytes, e.used, e.complete = msgs, bytes, c.epoch.Load(), complete
		sh.lru.MoveToFront(el)
	} else {
		sh.m[key] = sh.lru.PushFront(&histEntry{key: key, msgs: msgs, bytes: bytes, used: c.epoch.Load(), complete: complete})
	}
	sh.bytes += bytes
	for sh.bytes > histCacheBytes/histShards {
		old := sh.lru.Back()
		oe := old.Value.(*histEntry)
		sh.lru.Remove(old)
		delete(sh.m, oe.key)
		sh.bytes -= oe.bytes
	}
}

// extend caches cached (what get returned for key) followed by newer, and returns that. It
// appends newer in place when key's entry is still cached and its array has room after it:
// every slice handed out of the entry ends at or before its length (get, tail), so nothing
// reads where it writes. Otherwise the entries move to a new array with room for histRoom
// more, so a conversation copies its window once per histRoom messages, not on every turn.
//
// complete marks the result complete (writeThrough) or not.
func (c *historyCache) extend(key echogate.SessionKey, cached, newer []echogate.StoredMessage, complete bool) []echogate.StoredMessage {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var cur []echogate.StoredMessage
	if el, ok := sh.m[key]; ok {
		cur = el.Value.(*histEntry).msgs
	}
	var all []echogate.StoredMessage
	if len(cur) > 0 && len(cur) == len(cached) && &cur[0] == &cached[0] && len(newer) <= cap(cur)-len(cur) {
		all = append(cur, newer...)
	} else {
		keep := cached[min(len(cached), max(0, len(cached)+len(newer)-c.window)):]
		// Grown by append, so its capacity is the whole allocation (rounded up to the
		// allocator's size class): the room the cache accounts for is the room it has.
		all = slices.Grow([]echogate.StoredMessage(nil), len(keep)+len(newer)+histRoom)
		all = append(append(all, keep...), newer...)
	}
	if len(all) > c.window {
		all = all[len(all)-c.window:]
	}
	c.putLocked(sh, key, all, complete)
	return all
}

// histRoom is the entries a cached transcript has room for after it (see extend).
const histRoom = 16

// drop forgets key (its session was deleted here).
func (c *historyCache) drop(key echogate.SessionKey) { c.put(key, nil) }

// storedEntrySize is the bytes of one entry in a cached array (208 on 64-bit platforms), its
// strings' headers included.
const storedEntrySize = int(unsafe.Sizeof(echogate.StoredMessage{}))

// histEntryOverhead is what a cached session costs besides its entries: its histEntry, list
// element and map slot.
const histEntryOverhead = 160

// storedSize estimates the memory held by msgs.
func storedSize(msgs []echogate.StoredMessage) int {
	n := 0
	for _, sm := range msgs {
		m := sm.Message
		n += storedEntrySize + len(sm.Turn) + len(m.Content) + len(m.Name) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
		for _, im := range m.Images {
			n += 48 + len(im.URL) + len(im.MIME)
		}
		for _, a := range m.Attachments {
			n += 96 + len(a.Name) + len(a.URL) + len(a.MIME) + len(a.ID)
		}
	}
	return n
}

// history returns the last `limit` transcript entries of key (limit <= the cache window),
// oldest first, from the cache plus what the store holds after it, or from the store alone.
// src tells which: histCached (the transcript continued the one cached, so the session was
// not deleted since), histChanged (it did not: deleted, perhaps started again, elsewhere) or
// histRead (nothing was cached). The returned slice may share the cache's array: the caller
// reads it (or reslices or appends to it), never modifies its elements.
// The store's read after the cached entries may have come with the turn's start writes (w,
// turnstart.Start.HistorySince, asked by beginTurn): the store is not asked again.
func (s *ContextStage) history(ctx context.Context, w *turnstart.Start, key echogate.SessionKey, limit int) (hist []echogate.StoredMessage, src histSource, err error) {
	window := s.hist.window
	if limit <= 0 || limit > window {
		hist, err = s.store.History(ctx, key, limit)
		return hist, histRead, err
	}
	var all []echogate.StoredMessage
	src = histRead
	cached, complete := s.hist.lookup(key)
	if len(cached) > 0 && complete && s.soleWriter {
		// This process wrote the session's last turn through to the cache (writeThrough) and
		// is the only one writing its transcript: nothing newer can be in the store.
		s.metrics.HistoryCache(true)
		return tail(cached, limit), histCached, nil
	}
	if len(cached) > 0 {
		newer, ok, err := s.historySince(ctx, w, key, cached[len(cached)-1], window)
		if err != nil {
			return nil, histRead, err
		}
		if ok {
			s.metrics.HistoryCache(true)
			all = cached
			if len(newer) > 0 {
				all = s.hist.extend(key, cached, newer, false)
			}
			return tail(all, limit), histCached, nil
		}
		src = histChanged
	}
	s.metrics.HistoryCache(false)
	all, err = s.store.History(ctx, key, window)
	if err != nil {
		return nil, histRead, err
	}
	s.hist.put(key, all)
	return tail(all, limit), src, nil
}

// historySince is the store's HistorySince, or what w read with the turn's start writes.
func (s *ContextStage) historySince(ctx context.Context, w *turnstart.Start, key echogate.SessionKey, after echogate.StoredMessage, limit int) ([]echogate.StoredMessage, bool, error) {
	if h, ok := w.HistorySince(ctx, after); ok {
		return h.Entries, h.OK, h.Err
	}
	return s.store.HistorySince(ctx, key, after, limit)
}

// histSource says where history found a transcript.
type histSource int

const (
	histRead    histSource = iota // read whole: nothing was cached
	histCached                    // the cache, plus what the store held after it
	histChanged                   // read whole: the cached one was gone from the store
)

// tail returns the last n entries of msgs, without a copy: its capacity ends with it, so an
// append copies instead of writing into msgs' array.
func tail(msgs []echogate.StoredMessage, n int) []echogate.StoredMessage {
	if len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	return msgs[:len(msgs):len(msgs)]
}
