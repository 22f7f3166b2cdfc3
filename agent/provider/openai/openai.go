// Package openai is the agent.Model for OpenAI-compatible chat-completions endpoints (OpenAI,
// Azure-style proxies, Ollama, vLLM, LiteLLM, OpenRouter…), built on github.com/sashabaranov/go-openai.
//
// Generate streams every answer (stream: true, stream_options.include_usage), delivers content and
// reasoning fragments in order, assembles tool calls from their fragments, and reports usage from
// the final chunk. Failures before the first fragment are retried with exponential backoff and
// jitter (429 honouring Retry-After, 5xx, timeouts, connection errors); after the first fragment
// a failure is returned, never retried, because the caller already showed part of the answer.
//
// Embed computes embeddings in batches for memory and knowledge.
package openai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults of Config.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxRetries     = 3
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultMaxRetryDelay  = 10 * time.Second
	DefaultMaxRetryAfter  = 20 * time.Second
	DefaultEmbeddingBatch = 256
	maxEmbeddingBatch     = 2048
)

// Config configures a Provider. The zero value talks to OpenAI with no key (which New rejects:
// OpenAI needs one) and the defaults below.
type Config struct {
	// BaseURL of the OpenAI-compatible API, including /v1. Empty means https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token. It may be empty only for a non-OpenAI BaseURL (a local
	// Ollama or vLLM). It is never logged.
	APIKey string
	// Organization is sent as OpenAI-Organization when set.
	Organization string
	// Timeout bounds the wait for a response to start and every silence between two chunks of a
	// stream (an idle timeout, so long answers are not cut; time spent in the caller's onDelta
	// does not count); for embeddings it bounds each request. 0 means 60s. The whole call is
	// bounded by the caller's ctx.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried before the first fragment was
	// delivered. 0 means 3; negative means no retries.
	MaxRetries int
	// RetryBaseDelay is the first backoff; it doubles per retry, with jitter, up to MaxRetryDelay.
	// 0 means 500ms; MaxRetryDelay 0 means 10s.
	RetryBaseDelay time.Duration
	MaxRetryDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After the provider waits out itself; a longer wait is
	// returned at once (a *echogate.RetryAfterError wrapping agent.ErrUnavailable) so a router can
	// move on. 0 means 20s.
	MaxRetryAfter time.Duration
	// HTTPClient is used for every request; nil means a client on a clone of
	// http.DefaultTransport that keeps up to 1024 idle connections to the endpoint. Do not set http.Client.Timeout: it would cut long streams (use
	// Timeout, which is an idle timeout).
	HTTPClient *http.Client
	// OmitStreamUsage leaves out stream_options.include_usage, for old servers that reject it.
	// Usage is then reported as zero tokens.
	OmitStreamUsage bool
	// EmbeddingBatch is the number of inputs per embeddings request; 0 means 256, at most 2048.
	EmbeddingBatch int
	// PromptCacheKey says whether chat requests carry prompt_cache_key (a digest of the
	// request's CacheKey, the session): CacheKeyAuto (empty: only to api.openai.com),
	// CacheKeyOn or CacheKeyOff.
	PromptCacheKey string
}

// Provider is an agent.Model on an OpenAI-compatible endpoint. It is safe for concurrent use.
type Provider struct {
	cfg    Config
	client *goopenai.Client // embeddings
	doer   captureDoer      // the HTTP client of chat streams
	tools  toolsCache       // encoded tool schemas (wire.go)
	log    *slog.Logger
	base   string // base URL for messages (no credentials)
	// cacheKey: chat requests carry prompt_cache_key (Config.PromptCacheKey).
	cacheKey bool

	// Hooks replaced by tests; real time otherwise.
	sleep    func(ctx context.Context, d time.Duration) error
	jitter   func() float64
	newTimer func(d time.Duration, f func()) timer
	// bodyReleased, when set, is called each time an attempt gives its request body back.
	bodyReleased func()
}

// timer is the part of *time.Timer the idle timeout uses.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// New validates cfg and returns a provider. It does no I/O.
func New(cfg Config, log *slog.Logger) (*Provider, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL: set OPENAI_BASE_URL to e.g. https://api.openai.com/v1", cfg.BaseURL)
	}
	if u.User != nil {
		return nil, errors.New("openai: base URL must not carry credentials: put the key in OPENAI_API_KEY")
	}
	if cfg.APIKey == "" && u.Host == "api.openai.com" {
		return nil, errors.New("openai: OPENAI_API_KEY is empty: set it, or point OPENAI_BASE_URL at a server that needs no key")
	}
	if strings.ContainsAny(cfg.APIKey, " \t\r\n") {
		return nil, errors.New("openai: OPENAI_API_KEY contains whitespace: remove the spaces or newline around the key")
	}
	switch {
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("openai: timeout %s is negative: use a positive duration or 0 for the default", cfg.Timeout)
	case cfg.RetryBaseDelay < 0, cfg.MaxRetryDelay < 0, cfg.MaxRetryAfter < 0:
		return nil, errors.New("openai: retry delays must not be negative: use 0 for the defaults")
	case cfg.EmbeddingBatch < 0 || cfg.EmbeddingBatch > maxEmbeddingBatch:
		return nil, fmt.Errorf("openai: embedding batch %d is outside 1..%d: use 0 for the default", cfg.EmbeddingBatch, maxEmbeddingBatch)
	}
	if err := validCacheKeyMode(cfg.PromptCacheKey); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.RetryBaseDelay == 0 {
		cfg.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if cfg.MaxRetryDelay == 0 {
		cfg.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.EmbeddingBatch == 0 {
		cfg.EmbeddingBatch = DefaultEmbeddingBatch
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport()}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cc := goopenai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cfg.BaseURL
	cc.OrgID = cfg.Organization
	cc.HTTPClient = captureDoer{hc}
	return &Provider{
		cfg:      cfg,
		client:   goopenai.NewClientWithConfig(cc),
		doer:     captureDoer{hc},
		log:      log,
		base:     cfg.BaseURL,
		cacheKey: sendsCacheKey(cfg.PromptCacheKey, cfg.BaseURL),
		sleep:    sleepCtx,
		jitter:   rand.Float64,
		newTimer: func(d time.Duration, f func()) timer {
			return time.AfterFunc(d, f)
		},
	}, nil
}

// maxIdleConns is how many idle connections to the endpoint the default client keeps. Every
// concurrent turn holds one connection while it streams; with http.DefaultTransport's 2 idle
// connections per host, all but two of them were closed after each answer and the next call
// paid a new TCP (and TLS) handshake.
const maxIdleConns = 1024

// idleConnTimeout closes a connection to the endpoint that carried no call for this long (the
// default transport keeps one 90 s): after a burst of concurrent turns each idle connection
// still holds two goroutines and its buffers. Turns of an active conversation come sooner.
const idleConnTimeout = 30 * time.Second

// Buffers of one connection to the endpoint, which it keeps for as long as it is open (idle
// ones too), one connection per concurrent turn: net/http's default is 4 KiB each way. A
// request's head is a few hundred bytes, and a body past the write buffer goes to the socket
// in the same two writes whatever the buffer's size; the read buffer holds a response's head
// (a long header line is read in pieces) and the stream's chunks on their way to the stream's
// own line reader (readers).
const (
	connReadBuffer  = 2 << 10
	connWriteBuffer = 1 << 10
)

// newTransport is http.DefaultTransport with enough idle connections for concurrent sessions
// and smaller per-connection buffers, its connections copyConns.
func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return copyConn{c}, nil
	}
	tr.MaxIdleConns = maxIdleConns
	tr.MaxIdleConnsPerHost = maxIdleConns
	tr.IdleConnTimeout = idleConnTimeout
	tr.ReadBufferSize = connReadBuffer
	tr.WriteBufferSize = connWriteBuffer
	return tr
}

// BaseURL returns the endpoint the provider talks to.
func (p *Provider) BaseURL() string { return p.base }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
