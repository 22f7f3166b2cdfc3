package sqlite

import "github.com/echogate/echogate"

// seqCache remembers each session's last transcript seq as the writer committed it, so an
// append need not ask for max(seq) first (a third of FinishTurn's statement time at 1000
// sessions, bench/turns). It belongs to the writer goroutine: no lock.
//
// A call's new seqs stay pending until its transaction commits; any rollback (of the
// transaction or of one call's savepoint) drops every pending seq, and deleting a transcript
// here forgets its session. So a cached seq is too low only when another process appended to
// the file, and appendTx recovers by asking the database when an insert meets an existing seq;
// it is too high only when another process deleted the transcript (`echogate compact`), and the
// numbering then goes on after the deleted seqs: a gap, never a duplicate.
type seqCache struct {
	m       map[echogate.SessionKey]int64
	pending map[echogate.SessionKey]int64
}

// maxSeqCache bounds the sessions remembered; past it the cache starts empty again.
const maxSeqCache = 1 << 14

func (c *seqCache) get(key echogate.SessionKey) (int64, bool) {
	if seq, ok := c.pending[key]; ok {
		return seq, true
	}
	seq, ok := c.m[key]
	return seq, ok
}

// set records key's last seq in the running transaction.
func (c *seqCache) set(key echogate.SessionKey, seq int64) {
	if c.pending == nil {
		c.pending = make(map[echogate.SessionKey]int64)
	}
	c.pending[key] = seq
}

// forget drops key (its transcript was deleted or could not be trusted).
func (c *seqCache) forget(key echogate.SessionKey) {
	delete(c.pending, key)
	delete(c.m, key)
}

// committed keeps the pending seqs: their transaction committed.
func (c *seqCache) committed() {
	if len(c.pending) == 0 {
		return
	}
	if c.m == nil || len(c.m)+len(c.pending) > maxSeqCache {
		c.m = make(map[echogate.SessionKey]int64, len(c.pending))
	}
	for k, v := range c.pending {
		c.m[k] = v
	}
	clear(c.pending)
}

// rolledBack drops the pending seqs.
func (c *seqCache) rolledBack() { clear(c.pending) }
