package metrics

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Family is one metric family as gathered for exposition (and read back by tests and tools).
type Family struct {
	Name, Help string
	Kind       string // counter, gauge, histogram or summary
	Samples    []Sample
}

// Sample is one series of a family. Counters and gauges carry Value; histograms carry their
// cumulative Buckets (the +Inf bucket is Count), Count and Sum; summaries Count and Sum.
type Sample struct {
	LabelNames, LabelValues []string
	Value                   float64
	Buckets                 []Bucket
	Count                   uint64
	Sum                     float64
}

// Bucket is a histogram bucket: the observations ≤ UpperBound (cumulative).
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Label is the value of the sample's label name, or "" when it has none.
func (s Sample) Label(name string) string {
	for i, n := range s.LabelNames {
		if n == name {
			return s.LabelValues[i]
		}
	}
	return ""
}

// registry holds the collectors of one Metrics; each collector emits one or more families at
// gather time.
type registry struct {
	mu         sync.Mutex
	collectors []func(emit func(Family))
}

func (r *registry) add(c func(emit func(Family))) {
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
}

// gather collects every family, sorted by name.
func (r *registry) gather() []Family {
	r.mu.Lock()
	cs := append([]func(emit func(Family)){}, r.collectors...)
	r.mu.Unlock()
	var fams []Family
	for _, c := range cs {
		c(func(f Family) { fams = append(fams, f) })
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	return fams
}

func (r *registry) counter(name, help string) *Counter {
	c := &Counter{}
	r.add(func(emit func(Family)) {
		emit(Family{Name: name, Help: help, Kind: "counter", Samples: []Sample{{Value: c.Value()}}})
	})
	return c
}

func (r *registry) gauge(name, help string) *Gauge {
	g := &Gauge{}
	r.add(func(emit func(Family)) {
		emit(Family{Name: name, Help: help, Kind: "gauge", Samples: []Sample{{Value: g.Value()}}})
	})
	return g
}

func (r *registry) histogram(name, help string, buckets []float64) *Histogram {
	h := newHistogram(buckets)
	r.add(func(emit func(Family)) {
		emit(Family{Name: name, Help: help, Kind: "histogram", Samples: []Sample{histogramSample(h, nil, nil)}})
	})
	return h
}

func (r *registry) counterVec(name, help string, labels ...string) *CounterVec {
	names, order := byName(labels)
	v := newVec(labels, func() *Counter { return &Counter{} })
	r.add(func(emit func(Family)) {
		f := Family{Name: name, Help: help, Kind: "counter"}
		v.each(func(values []string, c *Counter) {
			f.Samples = append(f.Samples, Sample{LabelNames: names, LabelValues: order(values), Value: c.Value()})
		})
		emit(f)
	})
	return &CounterVec{v}
}

func (r *registry) gaugeVec(name, help string, labels ...string) *GaugeVec {
	names, order := byName(labels)
	v := newVec(labels, func() *Gauge { return &Gauge{} })
	r.add(func(emit func(Family)) {
		f := Family{Name: name, Help: help, Kind: "gauge"}
		v.each(func(values []string, g *Gauge) {
			f.Samples = append(f.Samples, Sample{LabelNames: names, LabelValues: order(values), Value: g.Value()})
		})
		emit(f)
	})
	return &GaugeVec{v}
}

func (r *registry) histogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	names, order := byName(labels)
	v := newVec(labels, func() *Histogram { return newHistogram(buckets) })
	r.add(func(emit func(Family)) {
		f := Family{Name: name, Help: help, Kind: "histogram"}
		v.each(func(values []string, h *Histogram) {
			f.Samples = append(f.Samples, histogramSample(h, names, order(values)))
		})
		emit(f)
	})
	return &HistogramVec{v}
}

// byName returns the label names sorted, as Prometheus clients expose them, and a function that
// puts values given in the family's label order into that order.
func byName(labels []string) ([]string, func([]string) []string) {
	perm := make([]int, len(labels))
	for i := range perm {
		perm[i] = i
	}
	sort.SliceStable(perm, func(a, b int) bool { return labels[perm[a]] < labels[perm[b]] })
	names := make([]string, len(labels))
	for i, p := range perm {
		names[i] = labels[p]
	}
	return names, func(values []string) []string {
		out := make([]string, len(perm))
		for i, p := range perm {
			out[i] = values[p]
		}
		return out
	}
}

func histogramSample(h *Histogram, labels, values []string) Sample {
	cum, count, sum := h.snapshot()
	s := Sample{LabelNames: labels, LabelValues: values, Count: count, Sum: sum}
	for i, ub := range h.upper {
		s.Buckets = append(s.Buckets, Bucket{UpperBound: ub, Count: cum[i]})
	}
	return s
}

// appendText appends the families in the Prometheus text exposition format (version 0.0.4).
// A family without series is left out.
func appendText(b []byte, fams []Family) []byte {
	for _, f := range fams {
		if len(f.Samples) == 0 {
			continue
		}
		b = append(b, "# HELP "...)
		b = append(b, f.Name...)
		b = append(b, ' ')
		b = append(b, escapeHelp.Replace(f.Help)...)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.Name...)
		b = append(b, ' ')
		b = append(b, f.Kind...)
		b = append(b, '\n')
		for _, s := range f.Samples {
			switch f.Kind {
			case "histogram":
				for _, bk := range s.Buckets {
					b = appendLine(b, f.Name+"_bucket", s, "le", formatFloat(bk.UpperBound), float64(bk.Count))
				}
				b = appendLine(b, f.Name+"_bucket", s, "le", "+Inf", float64(s.Count))
				b = appendLine(b, f.Name+"_sum", s, "", "", s.Sum)
				b = appendLine(b, f.Name+"_count", s, "", "", float64(s.Count))
			case "summary":
				b = appendLine(b, f.Name+"_sum", s, "", "", s.Sum)
				b = appendLine(b, f.Name+"_count", s, "", "", float64(s.Count))
			default:
				b = appendLine(b, f.Name, s, "", "", s.Value)
			}
		}
	}
	return b
}

// appendLine appends one sample line: name{labels[,extra="value"]} v.
func appendLine(b []byte, name string, s Sample, extra, extraValue string, v float64) []byte {
	b = append(b, name...)
	if len(s.LabelNames) > 0 || extra != "" {
		b = append(b, '{')
		for i, n := range s.LabelNames {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, n, s.LabelValues[i])
		}
		if extra != "" {
			if len(s.LabelNames) > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, extra, extraValue)
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = append(b, formatFloat(v)...)
	return append(b, '\n')
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	b = append(b, escapeValue.Replace(value)...)
	return append(b, '"')
}

var (
	escapeHelp  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	escapeValue = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
