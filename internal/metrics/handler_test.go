package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandlerServesUncompressed(t *testing.T) {
	m := New()
	m.Event("web", "direct")
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	m.Handler().ServeHTTP(rec, req)
	if got := rec.Header().Get("Content-Encoding"); got != "" {
		t.Errorf("Content-Encoding = %q, want none", got)
	}
	if body := rec.Body.String(); !strings.Contains(body, `echogate_events_total{channel="web",kind="direct"} 1`) {
		t.Errorf("body lacks the counter:\n%.500s", body)
	}
}
