package discord

import (
	"net/http"
	"net/url"
	"strings"
)

// rewriteTransport sends discordgo's requests for https://discord.com/api/v9/… to the configured
// REST base URL (scheme, host and path prefix). discordgo builds URLs from package-level endpoint
// variables; rewriting in the transport keeps those globals untouched, so several channels (and
// tests) with different base URLs can run in one process.
type rewriteTransport struct {
	base   http.RoundTripper
	target *url.URL // with a trailing "/" in Path
}

func newRewriteTransport(base http.RoundTripper, apiURL string) (*rewriteTransport, error) {
	u, err := url.Parse(apiURL)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &rewriteTransport{base: base, target: u}, nil
}

// rewrite returns the URL a request for u is sent to: u itself unless it is under discord.com's
// API prefix.
func (t *rewriteTransport) rewrite(u *url.URL) (*url.URL, bool) {
	full := u.String()
	if !strings.HasPrefix(full, discordAPIPrefix) {
		return u, false
	}
	rest := strings.TrimPrefix(u.EscapedPath(), "/api/v9/")
	nu := *t.target
	nu.RawPath = ""
	nu.Path = ""
	p, err := url.Parse(strings.TrimSuffix(t.target.EscapedPath(), "/") + "/" + rest)
	if err != nil {
		return u, false
	}
	nu.Path = p.Path
	nu.RawPath = p.RawPath
	nu.RawQuery = u.RawQuery
	return &nu, true
}

// RoundTrip implements http.RoundTripper. It clones the request before changing its URL, as the
// RoundTripper contract requires.
func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	nu, ok := t.rewrite(req.URL)
	if !ok {
		return t.base.RoundTrip(req)
	}
	r2 := req.Clone(req.Context())
	r2.URL = nu
	r2.Host = nu.Host
	return t.base.RoundTrip(r2)
}
