package pipeline

import (
	"context"
	"fmt"
	"runtime"
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

// extend appends in place while it can: the views handed out before keep their entries, a
// stale view extends by a copy, and the window holds.
func TestHistoryCacheExtendKeepsEarlierViews(t *testing.T) {
	c := newHistoryCache(5)
	c.put("a", stored("a", 1, 3, 10))
	type view struct {
		got  []echogate.StoredMessage
		seqs string
	}
	var views []view
	next := 4
	for range 40 { // more turns than histRoom: both the in-place and the copying path
		cached := c.get("a")
		views = append(views, view{cached, fmt.Sprint(seqs(cached))})
		all := c.extend("a", cached, stored("a", next, 2, 10), false)
		next += 2
		if got, want := fmt.Sprint(seqs(all)), fmt.Sprint(seqsFrom(next-5, 5)); got != want {
			t.Fatalf("extend to seq %d = %s, want the window %s", next-1, got, want)
		}
	}
	// A stale view (its entry was extended since) extends by a copy from itself.
	stale := views[len(views)-1].got
	all := c.extend("a", stale, stored("a", 900, 1, 10), false)
	if got := seqs(all); got[len(got)-1] != 900 || got[len(got)-2] != stale[len(stale)-1].Seq {
		t.Errorf("extend of a stale view = %v, want it followed by 900", got)
	}
	for i, v := range views {
		if got := fmt.Sprint(seqs(v.got)); got != v.seqs {
			t.Errorf("view %d = %s after later extends, want %s as handed out", i, got, v.seqs)
		}
	}
}

func seqsFrom(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

// sinceStore answers HistorySince with the two entries of one more turn each time.
type sinceStore struct {
	Store
	next int64
}

func (s *sinceStore) HistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int) ([]echogate.StoredMessage, bool, error) {
	out := stored(key, int(s.next), 2, 200)
	s.next += 2
	return out, true, nil
}

// BenchmarkHistoryCachedTurn is what a turn of an ongoing conversation pays for its history
// window of 50 entries when cached: the store's answer (two entries) added to the cached window.
func BenchmarkHistoryCachedTurn(b *testing.B) {
	st := &sinceStore{next: 51}
	p := &ContextStage{hist: newHistoryCache(50), store: st}
	p.hist.put("s", stored("s", 1, 50, 200))
	b.ReportAllocs()
	for b.Loop() {
		if _, src, err := p.history(context.Background(), nil, "s", 49); err != nil || src != histCached {
			b.Fatalf("history = %v, %v; want it cached", src, err)
		}
	}
}

// The cache's byte budget is what it holds on the heap: sessions growing turn by turn (extend,
// with its room after each array) are accounted at no less than the heap they take, so
// histCacheBytes bounds the memory, not only the estimate. Short chat lines make the arrays
// most of it, as at a thousand sessions of ordinary chat.
func TestHistoryCacheBudgetCoversItsHeap(t *testing.T) {
	const sessions, turns = 4000, 6
	before := heapLiveAfterGC()
	c := newHistoryCache(40)
	for i := range sessions {
		key := echogate.SessionKey(fmt.Sprintf("web:s%d", i))
		var cached []echogate.StoredMessage
		for n := range turns {
			turn := fmt.Sprintf("t_%d_%d", i, n)
			newer := []echogate.StoredMessage{
				{Session: key, Seq: int64(2*n + 1), Turn: turn, Message: echogate.Message{Role: echogate.RoleUser, Content: fmt.Sprintf("message %d", n)}},
				{Session: key, Seq: int64(2*n + 2), Turn: turn, Message: echogate.Message{Role: echogate.RoleAssistant, Content: strings.Repeat("answer ", 8)}},
			}
			cached = c.extend(key, cached, newer, true)
		}
	}
	held := heapLiveAfterGC() - before
	accounted := 0
	for i := range c.shards {
		accounted += c.shards[i].bytes
	}
	if accounted > histCacheBytes {
		t.Errorf("cache accounts %d bytes, over its budget %d", accounted, histCacheBytes)
	}
	if float64(held) > 1.15*float64(accounted) {
		t.Errorf("%d cached sessions hold %d heap bytes, but the cache accounts %d: the estimate undercounts by %.0f%%",
			c.len(), held, accounted, 100*(float64(held)/float64(accounted)-1))
	}
	t.Logf("%d sessions: heap %d bytes, accounted %d (budget %d)", c.len(), held, accounted, histCacheBytes)
	runtime.KeepAlive(c)
}

// heapLiveAfterGC is the heap's live bytes after a full collection.
func heapLiveAfterGC() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
