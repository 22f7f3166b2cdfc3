package slack

import golru "github.com/hashicorp/golang-lru/v2"

// lru is a small, bounded, concurrency-safe LRU map: hashicorp/golang-lru's Cache, whose map
// grows with its entries (an idle channel does not hold storage for a bound it may never reach).
type lru[K comparable, V any] struct{ c *golru.Cache[K, V] }

// newLRU makes an LRU of at most size (at least 1) entries.
func newLRU[K comparable, V any](size int) *lru[K, V] {
	c, err := golru.New[K, V](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1, excluded above
	}
	return &lru[K, V]{c: c}
}

// Add adds or replaces k's value and marks k most recently used.
func (c *lru[K, V]) Add(k K, v V) { c.c.Add(k, v) }

// Get returns k's value and marks k most recently used.
func (c *lru[K, V]) Get(k K) (V, bool) { return c.c.Get(k) }

// AddIfAbsent adds k and reports true, or reports false when k is already present (without
// changing its value or its recency).
func (c *lru[K, V]) AddIfAbsent(k K, v V) bool {
	present, _ := c.c.ContainsOrAdd(k, v)
	return !present
}

// Remove drops k.
func (c *lru[K, V]) Remove(k K) { c.c.Remove(k) }
