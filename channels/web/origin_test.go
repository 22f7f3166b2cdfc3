package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The Origin check of every state-changing endpoint, as a browser sends the headers: the
// Fetch Metadata header (Sec-Fetch-Site) when present, else the Origin compared with the Host.
func TestCheckOrigin(t *testing.T) {
	for name, tt := range map[string]struct {
		host, origin, site string
		want               string // "" allowed, else a phrase of the refusal
	}{
		"no browser headers (curl)":               {host: "127.0.0.1:8080"},
		"same origin":                             {host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080", site: "same-origin"},
		"same origin, old browser":                {host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080"},
		"typed in the address bar":                {host: "127.0.0.1:8080", site: "none"},
		"another site":                            {host: "127.0.0.1:8080", origin: "https://evil.example", site: "cross-site", want: "cross-origin request from \"https://evil.example\""},
		"another site, old browser":               {host: "127.0.0.1:8080", origin: "https://evil.example", want: "cross-origin request from"},
		"same-site without an Origin":             {host: "chat.example.com", site: "same-site", want: "cross-site request refused"},
		"cross-site without an Origin":            {host: "127.0.0.1:8080", site: "cross-site", want: "cross-site request refused"},
		"a sibling subdomain (same-site)":         {host: "chat.example.com", origin: "https://blog.example.com", site: "same-site", want: "cross-origin request from"},
		"another port of the same host":           {host: "localhost:8080", origin: "http://localhost:3000", site: "same-site", want: "cross-origin request from"},
		"the page through a Host-rewriting proxy": {host: "127.0.0.1:8080", origin: "https://chat.example.com", site: "same-origin"},
	} {
		r := httptest.NewRequest("POST", "/api/chat", strings.NewReader("{}"))
		r.Host = tt.host
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.site != "" {
			r.Header.Set("Sec-Fetch-Site", tt.site)
		}
		e := checkOrigin(r)
		switch {
		case tt.want == "" && e != nil:
			t.Errorf("%s: checkOrigin = %q, want allowed", name, e.msg)
		case tt.want != "" && (e == nil || e.status != 403 || !strings.Contains(e.msg, tt.want)):
			t.Errorf("%s: checkOrigin = %+v, want 403 saying %q", name, e, tt.want)
		}
	}
}
