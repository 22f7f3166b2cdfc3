package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

const publicIP = "93.184.215.14"

type fakeResolver map[string][]string

func (r fakeResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := r[strings.ToLower(host)]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// fileServer serves the test routes; it records the Authorization header of each request.
func fileServer(t *testing.T, auth map[string]string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/doc.pdf", func(w http.ResponseWriter, r *http.Request) {
		auth[r.Host+r.URL.Path] = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte("%PDF-1.4 tiny"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "5000")
		_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
	})
	mux.HandleFunc("/chunked-big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for range 10 {
			_, _ = w.Write([]byte(strings.Repeat("y", 1000)))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/zip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write([]byte("PK\x03\x04"))
	})
	mux.HandleFunc("/octet-zip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte("PK\x03\x04 zipped"))
	})
	mux.HandleFunc("/octet-pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte("%PDF-1.4 tiny"))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// newTestDownloader allows files.example (and subdomains) resolving to publicIP, routed to srv;
// private.files.example resolves to a private address.
func newTestDownloader(t *testing.T, srv *httptest.Server, trusted ...string) *Downloader {
	t.Helper()
	d, err := NewDownloader(DownloadConfig{
		Hosts:        []string{"files.example"},
		TrustedHosts: trusted,
		Resolver:     fakeResolver{"files.example": {publicIP}, "cdn.files.example": {publicIP}, "private.files.example": {"10.0.0.7"}, "evil.example": {publicIP}},
	})
	if err != nil {
		t.Fatal(err)
	}
	target := srv.Listener.Addr().String()
	d.SetDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		if host != publicIP {
			t.Errorf("dial %s reached the network layer; only checked public addresses may", addr)
			return nil, errors.New("test: unexpected dial")
		}
		var dd net.Dialer
		return dd.DialContext(ctx, "tcp", target)
	})
	// The test server speaks plain http; "https" URLs would need TLS. Route https to http by
	// trusting nothing extra and using http URLs on trusted hosts, or http on the public
	// family through a transport that rewrites the scheme.
	d.client.Transport = schemeRewriter{d.client.Transport}
	return d
}

// schemeRewriter sends https requests as plain http (the test server has no TLS).
type schemeRewriter struct{ base http.RoundTripper }

func (s schemeRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "https" {
		r2 := r.Clone(r.Context())
		r2.URL.Scheme = "http"
		resp, err := s.base.RoundTrip(r2)
		if resp != nil {
			resp.Request = r
		}
		return resp, err
	}
	return s.base.RoundTrip(r)
}

func TestDownloaderGet(t *testing.T) {
	auth := map[string]string{}
	srv := fileServer(t, auth)
	d := newTestDownloader(t, srv)
	ctx := context.Background()
	bearer := http.Header{"Authorization": {"Bearer xoxb-secret"}}
	for name, tt := range map[string]struct {
		url      string
		size     int64
		max      int64
		wantErr  error
		wantMIME string
		mention  string
	}{
		"pdf":                     {url: "https://files.example/doc.pdf", max: 100, wantMIME: "application/pdf"},
		"subdomain":               {url: "https://cdn.files.example/doc.pdf", max: 100, wantMIME: "application/pdf"},
		"stated size over":        {url: "https://files.example/doc.pdf", size: 101, max: 100, wantErr: echogate.ErrTooLarge, mention: "101 bytes"},
		"content-length over":     {url: "https://files.example/big", max: 1000, wantErr: echogate.ErrTooLarge, mention: "4.9 KiB"},
		"body over while reading": {url: "https://files.example/chunked-big", max: 2500, wantErr: echogate.ErrTooLarge, mention: "limit"},
		"type not allowed":        {url: "https://files.example/zip", max: 100, wantErr: ErrType, mention: "application/zip"},
		"octet sniffed zip":       {url: "https://files.example/octet-zip", max: 100, wantErr: ErrType, mention: "application/zip"},
		"octet sniffed pdf":       {url: "https://files.example/octet-pdf", max: 100, wantMIME: "application/pdf"},
		"404":                     {url: "https://files.example/missing", max: 100, wantErr: ErrStatus, mention: "404"},
		"other host":              {url: "https://evil.example/doc.pdf", max: 100, wantErr: ErrRefused, mention: "evil.example"},
		"lookalike host":          {url: "https://notfiles.example/doc.pdf", max: 100, wantErr: ErrRefused},
		"plain http":              {url: "http://files.example/doc.pdf", max: 100, wantErr: ErrRefused, mention: "https"},
		"private address":         {url: "https://private.files.example/doc.pdf", max: 100, wantErr: ErrRefused, mention: "10.0.0.7"},
		"redirect in family":      {url: "https://files.example/redirect?to=https://cdn.files.example/doc.pdf", max: 100, wantMIME: "application/pdf"},
		"redirect to other host":  {url: "https://files.example/redirect?to=https://evil.example/doc.pdf", max: 100, wantErr: ErrRefused, mention: "evil.example"},
		"redirect to private":     {url: "https://files.example/redirect?to=https://private.files.example/doc.pdf", max: 100, wantErr: ErrRefused, mention: "private"},
		"redirect to loopback":    {url: "https://files.example/redirect?to=http://127.0.0.1/doc.pdf", max: 100, wantErr: ErrRefused},
		"credentials in URL":      {url: "https://u:p@files.example/doc.pdf", max: 100, wantErr: ErrRefused},
		"relative URL":            {url: "/doc.pdf", max: 100, wantErr: ErrRefused},
	} {
		data, mt, err := d.Get(ctx, Request{URL: tt.url, Name: "doc.pdf", Header: bearer, Size: tt.size, MaxBytes: tt.max})
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("%s: Get(%s) = %v, want %v mentioning %q", name, tt.url, err, tt.wantErr, tt.mention)
			}
			if err != nil && strings.Contains(err.Error(), "xoxb-secret") {
				t.Errorf("%s: error %q leaks the token", name, err)
			}
			continue
		}
		if err != nil || mt != tt.wantMIME || len(data) == 0 {
			t.Errorf("%s: Get(%s) = %d bytes, %q, %v; want content of %s", name, tt.url, len(data), mt, err, tt.wantMIME)
		}
	}
	if got := auth["cdn.files.example/doc.pdf"]; got != "Bearer xoxb-secret" {
		t.Errorf("Authorization after an in-family redirect = %q, want the bearer token", got)
	}
}

func TestDownloaderTrustedHost(t *testing.T) {
	auth := map[string]string{}
	srv := fileServer(t, auth)
	host, _, _ := net.SplitHostPort(srv.Listener.Addr().String())
	d, err := NewDownloader(DownloadConfig{Hosts: []string{"files.example"}, TrustedHosts: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	data, mt, err := d.Get(context.Background(), Request{URL: srv.URL + "/doc.pdf", MaxBytes: 100})
	if err != nil || mt != "application/pdf" || string(data) != "%PDF-1.4 tiny" {
		t.Errorf("Get(trusted loopback) = %q, %q, %v; want the file", data, mt, err)
	}
	// A redirect from the trusted host to another loopback port is refused (host mismatch is
	// by name: 127.0.0.1 stays trusted, localhost does not).
	_, _, err = d.Get(context.Background(), Request{URL: srv.URL + "/redirect?to=http://localhost:1/x", MaxBytes: 100})
	if !errors.Is(err, ErrRefused) {
		t.Errorf("Get(redirect to localhost) = %v, want ErrRefused", err)
	}
}

func TestNewDownloaderValidates(t *testing.T) {
	for name, cfg := range map[string]DownloadConfig{
		"no hosts":        {},
		"host with path":  {Hosts: []string{"files.example/x"}},
		"negative":        {Hosts: []string{"a.example"}, MaxRedirects: -1},
		"wildcard host":   {Hosts: []string{"*.example"}},
		"host with a URL": {Hosts: []string{"https://files.example"}},
	} {
		if _, err := NewDownloader(cfg); err == nil {
			t.Errorf("%s: NewDownloader(%+v) = nil error, want one", name, cfg)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 20 << 20: "20 MiB", 48<<20 + 300<<10: "48.3 MiB", 3 << 30: "3 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLazyDownloaderBuildsOnceAndTrustsTheAPIHost(t *testing.T) {
	var l LazyDownloader
	d, err := l.Get([]string{"slack.com"}, "http://127.0.0.1:8123/api/")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.cfg.TrustedHosts; len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("TrustedHosts = %q, want the API URL's host", got)
	}
	again, err := l.Get([]string{"other.example"}, "")
	if err != nil || again != d {
		t.Errorf("second Get = %p, %v; want the same downloader %p", again, err, d)
	}
	var none LazyDownloader
	if d, err := none.Get([]string{"discord.com"}, ""); err != nil || len(d.cfg.TrustedHosts) != 0 {
		t.Errorf("Get without an API URL = %+v, %v; want no trusted host", d, err)
	}
}
