package builtin

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 36, finding 8 / Build 5: tools.http_fetch.allow_hosts and deny_hosts (host globs, deny
// wins, an empty allow list allows any public host).
func TestHTTPFetchDenyHostsWin(t *testing.T) {
	srv := fetchServer(t)
	f := newFetch(t, HTTPFetchConfig{AllowHosts: []string{"*.test"}, DenyHosts: []string{"other.test", "*.evil.test"}}, srv)
	for name, tt := range map[string]struct {
		url  string
		want string
		err  bool
	}{
		"allowed by glob":   {"http://public.test/plain", "plain text", false},
		"denied exactly":    {"http://other.test/json", "host other.test is denied by tools.http_fetch.deny_hosts (other.test)", true},
		"denied subdomain":  {"http://a.b.evil.test/", "denied by tools.http_fetch.deny_hosts (*.evil.test)", true},
		"not in allow list": {"http://example.com/", "host example.com is not allowed; allowed hosts", true},
	} {
		res, err := fetch(t, f, fmt.Sprintf(`{"url":%q}`, tt.url))
		if err != nil || res.IsError != tt.err || !strings.Contains(res.Content, tt.want) {
			t.Errorf("%s: Call(%s) = %+v, %v, want IsError %v containing %q", name, tt.url, res, err, tt.err, tt.want)
		}
	}
	only := newFetch(t, HTTPFetchConfig{DenyHosts: []string{"other.test"}}, srv)
	if res, err := fetch(t, only, `{"url":"http://public.test/plain"}`); err != nil || res.IsError {
		t.Errorf("deny only: Call(public.test) = %+v, %v, want it fetched (no allow list: any public host)", res, err)
	}
	if res, err := fetch(t, only, `{"url":"http://public.test/redirect?to=http://other.test/json"}`); err != nil || !res.IsError || !strings.Contains(res.Content, "deny_hosts") {
		t.Errorf("deny only: redirect to a denied host = %+v, %v, want it refused", res, err)
	}
}

func TestHostPatternMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, host string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "docs.example.com", true},
		{"example.com", "evilexample.com", false},
		{"*.example.com", "example.com", false},
		{"*.example.com", "a.b.example.com", true},
		{"api-*.example.com", "api-eu.example.com", true},
		{"api-*.example.com", "api-eu.x.example.com", false},
		{"*", "anything.at.all", true},
	} {
		p, err := parseHostPattern("allow_hosts", tt.pattern)
		if err != nil {
			t.Fatalf("parseHostPattern(%q) = %v", tt.pattern, err)
		}
		if got := p.match(tt.host); got != tt.want {
			t.Errorf("%q.match(%q) = %v, want %v", tt.pattern, tt.host, got, tt.want)
		}
	}
	for _, bad := range []string{"https://x.com", "x.com:443", "x.com/path", "user@x.com", "", "a b", "[x.com"} {
		if _, err := NewHTTPFetch(HTTPFetchConfig{DenyHosts: []string{bad}}); err == nil || !strings.Contains(err.Error(), "tools.http_fetch.deny_hosts") {
			t.Errorf("NewHTTPFetch(DenyHosts %q) = %v, want an error naming tools.http_fetch.deny_hosts", bad, err)
		}
	}
}
