package metrics

import (
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// The collectors below are the small part of a Prometheus client the gateway uses: counters,
// gauges and histograms with fixed label names, exposed in the text format by registry.write.
// A client library would bring the protobuf runtime and its start-up registrations into every
// binary for a page of text.

// Counter is a monotonically increasing float64. Safe for concurrent use.
type Counter struct{ bits atomic.Uint64 }

// Inc adds 1.
func (c *Counter) Inc() { c.Add(1) }

// Add adds v; a negative v is ignored (a counter never goes down).
func (c *Counter) Add(v float64) {
	if v > 0 {
		addFloat(&c.bits, v)
	}
}

// Value is the current count.
func (c *Counter) Value() float64 { return math.Float64frombits(c.bits.Load()) }

// Gauge is a float64 that goes up and down. Safe for concurrent use.
type Gauge struct{ bits atomic.Uint64 }

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds v (which may be negative).
func (g *Gauge) Add(v float64) { addFloat(&g.bits, v) }

// Value is the current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

func addFloat(bits *atomic.Uint64, v float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Histogram counts observations into cumulative buckets. Safe for concurrent use.
type Histogram struct {
	upper []float64 // bucket upper bounds, ascending; +Inf is implicit

	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	count  uint64
	sum    float64
}

func newHistogram(upper []float64) *Histogram {
	return &Histogram{upper: upper, counts: make([]uint64, len(upper)+1)}
}

// Observe records one value.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.upper, v) // the first bound ≥ v: buckets are "le"
	h.mu.Lock()
	h.counts[i]++
	h.count++
	h.sum += v
	h.mu.Unlock()
}

// snapshot returns cumulative bucket counts, the count and the sum.
func (h *Histogram) snapshot() (cum []uint64, count uint64, sum float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cum = make([]uint64, len(h.counts))
	var run uint64
	for i, n := range h.counts {
		run += n
		cum[i] = run
	}
	return cum, h.count, h.sum
}

// DefBuckets are the default histogram buckets, in seconds (those of the Prometheus clients).
var DefBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// vec is a family of one collector kind keyed by label values.
type vec[T any] struct {
	labels []string
	make   func() *T

	mu       sync.RWMutex
	children map[string]*child[T]
}

type child[T any] struct {
	values []string
	c      *T
}

func newVec[T any](labels []string, mk func() *T) *vec[T] {
	return &vec[T]{labels: labels, make: mk, children: map[string]*child[T]{}}
}

// with returns the collector of these label values, made at first use. Values beyond the
// family's labels are dropped and missing ones are empty: a wrong count is a programming error
// that should cost a wrong series, not the process.
func (v *vec[T]) with(values []string) *T {
	if len(values) != len(v.labels) {
		fixed := make([]string, len(v.labels))
		copy(fixed, values)
		values = fixed
	}
	key := strings.Join(values, "\xff")
	v.mu.RLock()
	ch, ok := v.children[key]
	v.mu.RUnlock()
	if ok {
		return ch.c
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if ch, ok := v.children[key]; ok {
		return ch.c
	}
	ch = &child[T]{values: append([]string(nil), values...), c: v.make()}
	v.children[key] = ch
	return ch.c
}

// each calls f for every child, in the order of their label values.
func (v *vec[T]) each(f func(values []string, c *T)) {
	v.mu.RLock()
	list := make([]*child[T], 0, len(v.children))
	for _, ch := range v.children {
		list = append(list, ch)
	}
	v.mu.RUnlock()
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].values, list[j].values
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	for _, ch := range list {
		f(ch.values, ch.c)
	}
}

// CounterVec is a family of counters with the same label names.
type CounterVec struct{ v *vec[Counter] }

// WithLabelValues is the counter of these label values (in the family's label order).
func (c *CounterVec) WithLabelValues(values ...string) *Counter { return c.v.with(values) }

// GaugeVec is a family of gauges with the same label names.
type GaugeVec struct{ v *vec[Gauge] }

// WithLabelValues is the gauge of these label values (in the family's label order).
func (g *GaugeVec) WithLabelValues(values ...string) *Gauge { return g.v.with(values) }

// HistogramVec is a family of histograms with the same label names and buckets.
type HistogramVec struct{ v *vec[Histogram] }

// WithLabelValues is the histogram of these label values (in the family's label order).
func (h *HistogramVec) WithLabelValues(values ...string) *Histogram { return h.v.with(values) }
