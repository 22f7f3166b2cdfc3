package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// Sentinel errors of Downloader.Get; returned errors wrap them (or echogate.ErrTooLarge) and
// say what happened.
var (
	// ErrRefused: the URL or a redirect points outside the allowed hosts, uses a scheme other
	// than https, or resolves to a non-public address.
	ErrRefused = errors.New("download refused")
	// ErrType: the content type is not on the allow-list (see AllowedType).
	ErrType = errors.New("content type not allowed")
	// ErrStatus: the server answered with a non-2xx status.
	ErrStatus = errors.New("download failed")
)

// Download defaults.
const (
	DefaultDownloadTimeout = 60 * time.Second
	DefaultMaxRedirects    = 3
	DefaultUserAgent       = "echogate-attachments/1 (+https://github.com/echogate/echogate)"
)

// DownloadConfig configures a Downloader. The zero value of each field means its default;
// Hosts is required.
type DownloadConfig struct {
	// Hosts is the host family files may come from: a URL, and every redirect, must be on one
	// of these hosts or their subdomains ("slack.com" allows files.slack.com). Required.
	Hosts []string
	// TrustedHosts are exact hosts that are allowed too, over http or https, whatever address
	// they resolve to: the platform API URL the operator configured (a proxy, a test fake).
	TrustedHosts []string
	// MaxRedirects bounds the redirects followed; default 3.
	MaxRedirects int
	// Timeout bounds one download (connect, redirects, body); default 60s.
	Timeout time.Duration
	// Resolver resolves host names; default net.DefaultResolver.
	Resolver Resolver
	// UserAgent is sent with every request; default DefaultUserAgent.
	UserAgent string
}

// LazyDownloader is a platform channel's Downloader, built on its first use. The zero value is
// ready; it is safe for concurrent use.
type LazyDownloader struct {
	once sync.Once
	d    *Downloader
	err  error
}

// Get returns the Downloader for hosts plus the host of apiURL, the platform API the operator
// configured (a proxy, a test fake), which may serve files too. It is built at the first call;
// later calls return the same one (or the same error) whatever their arguments.
func (l *LazyDownloader) Get(hosts []string, apiURL string) (*Downloader, error) {
	l.once.Do(func() {
		cfg := DownloadConfig{Hosts: hosts}
		if u, err := url.Parse(apiURL); err == nil && u.Hostname() != "" {
			cfg.TrustedHosts = []string{u.Hostname()}
		}
		l.d, l.err = NewDownloader(cfg)
	})
	return l.d, l.err
}

// Downloader fetches files from one platform's file hosts. It is safe for concurrent use.
type Downloader struct {
	cfg     DownloadConfig
	hosts   []string
	trusted map[string]bool
	guard   *Guard
	client  *http.Client
}

// Request is one download.
type Request struct {
	URL string
	// Name names the file in errors.
	Name string
	// Header is sent with the request and with redirects inside the host family (never
	// elsewhere): the platform credentials.
	Header http.Header
	// Size is the size the platform stated (0 when unknown). Over MaxBytes is refused before
	// anything is downloaded.
	Size int64
	// MaxBytes caps the body; required (> 0).
	MaxBytes int64
}

// NewDownloader validates cfg. It does no I/O.
func NewDownloader(cfg DownloadConfig) (*Downloader, error) {
	if cfg.MaxRedirects < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("netguard: download config: max redirects %d and timeout %s must not be negative", cfg.MaxRedirects, cfg.Timeout)
	}
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultDownloadTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	d := &Downloader{cfg: cfg, trusted: map[string]bool{}}
	for _, h := range cfg.Hosts {
		n := normalizeHost(h)
		if n == "" || strings.ContainsAny(n, "/:@ *") {
			return nil, fmt.Errorf("netguard: download config: host %q must be a bare host name such as files.slack.com", h)
		}
		d.hosts = append(d.hosts, n)
	}
	for _, h := range cfg.TrustedHosts {
		if n := normalizeHost(h); n != "" {
			d.trusted[n] = true
		}
	}
	if len(d.hosts) == 0 && len(d.trusted) == 0 {
		return nil, fmt.Errorf("netguard: download config: no hosts: name the platform's file hosts")
	}
	d.guard = NewGuard(false, cfg.Resolver, cfg.TrustedHosts...)
	transport := &http.Transport{
		Proxy:                  nil, // the address check must see the real target
		DialContext:            d.guard.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	d.client = &http.Client{Transport: transport}
	return d, nil
}

// SetDialer replaces the checked dial function (tests route "public" addresses to a local
// server with it).
func (d *Downloader) SetDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	d.guard.Dial = dial
}

// allowedHost reports whether host is in the family (or trusted), and whether it is trusted.
func (d *Downloader) allowedHost(host string) (ok, trusted bool) {
	h := normalizeHost(host)
	if d.trusted[h] {
		return true, true
	}
	for _, a := range d.hosts {
		if h == a || strings.HasSuffix(h, "."+a) {
			return true, false
		}
	}
	return false, false
}

// check vets one URL (the first or a redirect).
func (d *Downloader) check(u *url.URL) error {
	if u.User != nil {
		return fmt.Errorf("%w: %s carries credentials in the URL", ErrRefused, u.Redacted())
	}
	ok, trusted := d.allowedHost(u.Hostname())
	if !ok {
		return fmt.Errorf("%w: host %s is not one of the platform's file hosts (%s)", ErrRefused, u.Hostname(), strings.Join(d.hosts, ", "))
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !trusted {
			return fmt.Errorf("%w: %s is not https", ErrRefused, redact(u))
		}
	default:
		return fmt.Errorf("%w: URL scheme %q is not supported", ErrRefused, u.Scheme)
	}
	return nil
}

// redact drops the query (signed CDN URLs carry tokens in it) for messages and logs.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment, c.User = "", "", nil
	return c.String()
}

// Get downloads r.URL. It blocks until the body is read, the timeout passes or ctx ends (then it
// returns ctx's error). The body is at most r.MaxBytes: a larger stated size, Content-Length or
// body is an error wrapping echogate.ErrTooLarge. mediaType is the response's media type, or
// what the content sniffs as when the server sent a generic one; a type outside AllowedType is
// ErrType. Redirects are followed only within the host family, with the request's headers.
func (d *Downloader) Get(ctx context.Context, r Request) (data []byte, mediaType string, err error) {
	name := r.Name
	if name == "" {
		name = "the file"
	}
	if r.MaxBytes <= 0 {
		return nil, "", fmt.Errorf("netguard: download %s: no size limit given", name)
	}
	if r.Size > r.MaxBytes {
		return nil, "", fmt.Errorf("download %s: %w: %s is over the %s limit", name, echogate.ErrTooLarge, FormatBytes(r.Size), FormatBytes(r.MaxBytes))
	}
	u, err := url.Parse(strings.TrimSpace(r.URL))
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("download %s: %w: %q is not an absolute URL", name, ErrRefused, r.URL)
	}
	if err := d.check(u); err != nil {
		return nil, "", fmt.Errorf("download %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("download %s: %w", name, err)
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	resp, err := d.clientFor(r).Do(req)
	if err != nil {
		return nil, "", doError(ctx, err, name, u)
	}
	defer resp.Body.Close()
	return readBody(ctx, resp, r, name)
}

// clientFor is d's client with a redirect policy for r: at most MaxRedirects hops, each one
// checked as the first URL was, carrying r's headers (net/http drops them across domains).
func (d *Downloader) clientFor(r Request) *http.Client {
	client := *d.client
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if len(via) > d.cfg.MaxRedirects {
			return fmt.Errorf("%w: more than %d redirects", ErrRefused, d.cfg.MaxRedirects)
		}
		if err := d.check(next.URL); err != nil {
			return fmt.Errorf("redirect to %s: %w", redact(next.URL), err)
		}
		// Inside the family the credentials go along (net/http drops them across domains).
		for k, vs := range r.Header {
			next.Header[k] = vs
		}
		next.Header.Set("User-Agent", d.cfg.UserAgent)
		return nil
	}
	return &client
}

// doError names what failed when the request got no answer: ctx ending, a refused address or
// redirect (ErrRefused), or the transport's error, with the URL redacted.
func doError(ctx context.Context, err error, name string, u *url.URL) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("download %s: %w", name, ctx.Err())
	}
	var refused *RefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("download %s: %w: %v", name, ErrRefused, refused)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return fmt.Errorf("download %s from %s: %w", name, redact(u), err)
}

// readBody reads an answer within r.MaxBytes and returns it with its media type: the declared
// one, or the sniffed one when none or a generic one is declared; both must be allowed.
func readBody(ctx context.Context, resp *http.Response, r Request, name string) (data []byte, mediaType string, err error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, "", fmt.Errorf("download %s: %w: %s answered HTTP %s", name, ErrStatus, redact(resp.Request.URL), resp.Status)
	}
	if resp.ContentLength > r.MaxBytes {
		return nil, "", fmt.Errorf("download %s: %w: %s is over the %s limit", name, echogate.ErrTooLarge, FormatBytes(resp.ContentLength), FormatBytes(r.MaxBytes))
	}
	declared := mediaTypeOf(resp.Header.Get("Content-Type"))
	if declared != "" && !genericType(declared) && !AllowedType(declared) {
		return nil, "", fmt.Errorf("download %s: %w: %s", name, ErrType, declared)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, r.MaxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("download %s: %w", name, ctx.Err())
		}
		return nil, "", fmt.Errorf("download %s: read body: %w", name, err)
	}
	if int64(len(data)) > r.MaxBytes {
		return nil, "", fmt.Errorf("download %s: %w: more than the %s limit", name, echogate.ErrTooLarge, FormatBytes(r.MaxBytes))
	}
	mediaType = declared
	if declared == "" || genericType(declared) {
		mediaType = mediaTypeOf(http.DetectContentType(data))
		if !AllowedType(mediaType) {
			return nil, "", fmt.Errorf("download %s: %w: the content looks like %s", name, ErrType, mediaType)
		}
	}
	return data, mediaType, nil
}

func mediaTypeOf(ct string) string {
	if ct == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return strings.ToLower(mt)
	}
	return strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
}

func genericType(mt string) bool {
	switch mt {
	case "application/octet-stream", "binary/octet-stream", "application/binary", "application/unknown", "application/download":
		return true
	}
	return false
}

// AllowedType reports the media types attachments may have: text (incl. Markdown, HTML, CSV),
// PDF, JSON, XML, YAML and the image formats vision models take (PNG, JPEG, GIF, WebP).
func AllowedType(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/pdf", "application/json", "application/xml", "application/x-ndjson", "application/ndjson",
		"application/yaml", "application/x-yaml", "application/toml", "application/csv", "application/xhtml+xml",
		"image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// FormatBytes renders a size for people: "512 bytes", "3.2 KiB", "48 MiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := []string{"KiB", "MiB", "GiB", "TiB"}[exp]
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
