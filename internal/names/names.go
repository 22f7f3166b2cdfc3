// Package names keeps the display names the gateway has seen, by qualified platform id
// ("slack:U123" → "ann"), so the console can show "ann (slack:U123)" instead of a bare id.
// It holds only what inbound events and adapters told it since the process started, within a
// bound; nothing is stored.
package names

import (
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultMax bounds a Directory made with New(0).
const DefaultMax = 10000

// Directory is a bounded, concurrency-safe map of qualified id → display name; the least
// recently set or read entry goes first when it is full (hashicorp/golang-lru). The zero value is
// not usable: call New.
type Directory struct {
	c *lru.Cache[string, string]
}

// New returns a Directory holding at most max names (DefaultMax when max <= 0).
func New(max int) *Directory {
	if max <= 0 {
		max = DefaultMax
	}
	c, err := lru.New[string, string](max)
	if err != nil {
		panic(err) // only for a size below 1, excluded above
	}
	return &Directory{c: c}
}

// Set records name for id. An empty id or name, or a name equal to the bare id part
// ("slack:U1" named "U1"), says nothing and is ignored.
func (d *Directory) Set(id, name string) {
	name = strings.TrimSpace(name)
	if id == "" || name == "" || name == id || strings.HasSuffix(id, ":"+name) {
		return
	}
	d.c.Add(id, name)
}

// Get returns the name of id, if known.
func (d *Directory) Get(id string) (string, bool) {
	return d.c.Get(id)
}

// Lookup returns the known names of ids (unknown ids are left out).
func (d *Directory) Lookup(ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if n, ok := d.Get(id); ok {
			out[id] = n
		}
	}
	return out
}

// Len reports how many names the directory holds.
func (d *Directory) Len() int {
	return d.c.Len()
}
