package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the registry in the Prometheus text format, uncompressed: the page is a few
// tens of KB, scraped from the same host or network, while a gzip writer costs about 0.8 MiB of
// heap that its pool keeps between scrapes of an otherwise idle process.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{DisableCompression: true})
}
