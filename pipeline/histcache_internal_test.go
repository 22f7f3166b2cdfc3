package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

func stored(key echogate.SessionKey, from, n int, size int) []echogate.StoredMessage {
	out := make([]echogate.StoredMessage, n)
	for i := range out {
		out[i] = echogate.StoredMessage{Session: key, Seq: int64(from + i), Turn: "t",
			Message: echogate.Message{Role: echogate.RoleUser, Content: strings.Repeat("x", size)}}
	}
	return out
}

func TestHistoryCacheKeepsTheWindow(t *testing.T) {
	c := newHistoryCache(3)
	if got := c.get("a"); got != nil {
		t.Fatalf("get on an empty cache = %v, want nil", got)
	}
	c.put("a", stored("a", 1, 5, 10))
	got := c.get("a")
	if len(got) != 3 || got[0].Seq != 3 || got[2].Seq != 5 {
		t.Fatalf("get after put of 5 with window 3 = seqs %v, want the last 3 (3..5)", seqs(got))
	}
	c.put("a", nil) // an empty transcript is not cached
	if got := c.get("a"); got != nil {
		t.Errorf("get after put(nil) = %v, want nil", seqs(got))
	}
	c.put("a", stored("a", 1, 2, 10))
	c.drop("a")
	if got := c.get("a"); got != nil {
		t.Errorf("get after drop = %v, want nil", seqs(got))
	}
}

func TestHistoryCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newHistoryCache(40)
	perShard := histCacheBytes / histShards
	// Fill one shard past its budget with sessions of about a tenth of it each.
	size := perShard / 10
	var keys []echogate.SessionKey
	for i := 0; len(keys) < 12; i++ {
		k := echogate.SessionKey(fmt.Sprintf("s%d", i))
		if c.shard(k) == c.shard("s0") {
			keys = append(keys, k)
		}
	}
	for i, k := range keys[:9] {
		c.put(k, stored(k, 1, 1, size))
		if i == 0 {
			continue
		}
		c.get(keys[0]) // keep the first one recently used
	}
	for _, k := range keys[9:] {
		c.put(k, stored(k, 1, 1, size))
	}
	sh := c.shard("s0")
	if sh.bytes > perShard {
		t.Errorf("shard holds %d bytes, want at most its budget %d", sh.bytes, perShard)
	}
	if c.get(keys[0]) == nil {
		t.Errorf("the most recently used session was evicted")
	}
	if c.get(keys[1]) != nil {
		t.Errorf("the least recently used session is still cached")
	}
	if c.get(keys[11]) == nil {
		t.Errorf("the newest session is not cached")
	}
	// One transcript over a shard's budget is not cached at all.
	big := keys[10]
	c.put(big, stored(big, 1, 1, perShard))
	if c.get(big) != nil {
		t.Errorf("a transcript larger than a shard's budget was cached")
	}
}

func seqs(ms []echogate.StoredMessage) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}
