package metrics

import (
	"io"
	"net/http"
)

// Gather returns every family with its series, sorted by name: what /metrics serves.
func (m *Metrics) Gather() []Family { return m.reg.gather() }

// Samples returns the series of the family name (none when it has no series or is unknown).
func (m *Metrics) Samples(name string) []Sample {
	for _, f := range m.Gather() {
		if f.Name == name {
			return f.Samples
		}
	}
	return nil
}

// WriteText writes every family in the Prometheus text exposition format.
func (m *Metrics) WriteText(w io.Writer) error {
	_, err := w.Write(appendText(nil, m.Gather()))
	return err
}

// Handler serves the registry in the Prometheus text format (version 0.0.4), uncompressed:
// the page is a few tens of KB, scraped from the same host or network.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = m.WriteText(w)
	})
}
