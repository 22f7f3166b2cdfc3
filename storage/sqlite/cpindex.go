package sqlite

import (
	"context"
	"sync"

	"github.com/echogate/echogate"
)

// cpIndex knows which sessions have compression checkpoints, so LatestCheckpoint answers "none"
// without a read for the others: the context of every turn asks, and most sessions never grow
// long enough to be compressed (the read cost a read transaction per turn, about 2.5% of
// serve's CPU).
//
// It is loaded by Migrate from the table and adds a session before the transaction that saves
// its checkpoint commits, so it never says "none" for a checkpoint this process saved. It keeps
// a session whose checkpoints were deleted (the read then finds none, as before). A checkpoint
// another process saves in the same file (`echogate chat --session`) is seen only after this
// store's next Migrate: until then its turns use their full history, as before that
// checkpoint, which is complete, only longer. Past maxCPIndex sessions it stops answering and
// every call reads.
type cpIndex struct {
	mu     sync.Mutex
	loaded bool // the table was read: a session not in known has no checkpoint
	known  map[echogate.SessionKey]struct{}
}

// maxCPIndex bounds the sessions cpIndex remembers.
const maxCPIndex = 1 << 16

// none reports whether key certainly has no checkpoint.
func (c *cpIndex) none(key echogate.SessionKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		return false
	}
	_, ok := c.known[key]
	return !ok
}

// add records that key has (or is about to have) a checkpoint.
func (c *cpIndex) add(key echogate.SessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(key)
}

func (c *cpIndex) addLocked(key echogate.SessionKey) {
	if c.known == nil {
		c.known = make(map[echogate.SessionKey]struct{})
	}
	c.known[key] = struct{}{}
	if len(c.known) > maxCPIndex {
		c.loaded, c.known = false, nil // too many to keep: every call reads
	}
}

// load reads the sessions that have checkpoints. Sessions added meanwhile stay. A failed read
// leaves the index unloaded (every call reads).
func (c *cpIndex) load(ctx context.Context, d *dbs) error {
	rows, err := d.r.QueryContext(ctx, `SELECT DISTINCT session FROM checkpoints`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var keys []echogate.SessionKey
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return err
		}
		keys = append(keys, echogate.SessionKey(k))
		if len(keys) > maxCPIndex {
			return nil // too many: stay unloaded
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.addLocked(k)
	}
	c.loaded = len(c.known) <= maxCPIndex
	return nil
}
