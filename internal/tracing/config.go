package tracing

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Standard OpenTelemetry environment variables this package reads (through Config.Getenv).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"        // base URL; /v1/traces is appended
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" // full URL, used as is
	EnvHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"         // k1=v1,k2=v2 (values URL-encoded)
	EnvTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"  // same, traces only; wins over EnvHeaders
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED" // "true" turns tracing off whatever else is set
)

// tracesPath is the OTLP/HTTP path of the traces signal.
const tracesPath = "/v1/traces"

// Config configures the OTLP/HTTP trace exporter. The zero value of every field means the default
// documented on it; with no endpoint anywhere tracing is off (New returns ErrNoEndpoint).
type Config struct {
	// Endpoint is the collector's OTLP/HTTP base URL, e.g. http://otel-collector:4318 or
	// https://otlp.example.com/otlp: spans are POSTed to <Endpoint>/v1/traces (a URL that already
	// ends in /v1/traces is used as is). host:port without a scheme means https, or http with
	// Insecure. Empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is), else
	// OTEL_EXPORTER_OTLP_ENDPOINT (as a base URL).
	Endpoint string
	// Headers are sent with every export (API keys of hosted backends). They are merged over
	// OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS; these win on conflict.
	Headers map[string]string
	// Insecure uses plain HTTP for an Endpoint without a scheme. An https:// Endpoint with
	// Insecure is an error (write http:// instead).
	Insecure bool
	// ServiceName is the resource's service.name; default OTEL_SERVICE_NAME, else "echogate".
	ServiceName string
	// ServiceVersion is the resource's service.version; empty leaves it out.
	ServiceVersion string
	// SampleRatio is the fraction of turns (root spans) recorded, in (0, 1]; 0 means 1 (every
	// turn). Child spans follow their root's decision. To record nothing, configure no endpoint.
	SampleRatio float64
	// BatchTimeout is how long finished spans wait before they are exported; default 5s.
	BatchTimeout time.Duration
	// ExportTimeout bounds one export, retries included; default 30s.
	ExportTimeout time.Duration
	// MaxQueueSize bounds the spans waiting for export; when full, new spans are dropped (and
	// counted) rather than blocking a turn. Default 2048.
	MaxQueueSize int
	// Getenv reads the OTEL_* variables above; default os.Getenv.
	Getenv func(string) string
}

func (c Config) withDefaults() Config {
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.ServiceName == "" {
		c.ServiceName = strings.TrimSpace(c.Getenv(EnvServiceName))
	}
	if c.ServiceName == "" {
		c.ServiceName = "echogate"
	}
	if c.SampleRatio == 0 {
		c.SampleRatio = 1
	}
	if c.BatchTimeout <= 0 {
		c.BatchTimeout = 5 * time.Second
	}
	if c.ExportTimeout <= 0 {
		c.ExportTimeout = 30 * time.Second
	}
	if c.MaxQueueSize <= 0 {
		c.MaxQueueSize = 2048
	}
	return c
}

// Enabled reports whether cfg turns tracing on: an endpoint is set (in cfg or the environment)
// and OTEL_SDK_DISABLED is not true. It does no validation and no I/O.
func Enabled(cfg Config) bool {
	cfg = cfg.withDefaults()
	if disabled(cfg.Getenv) {
		return false
	}
	return strings.TrimSpace(cfg.Endpoint) != "" ||
		strings.TrimSpace(cfg.Getenv(EnvTracesEndpoint)) != "" ||
		strings.TrimSpace(cfg.Getenv(EnvEndpoint)) != ""
}

func disabled(getenv func(string) string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(getenv(EnvSDKDisabled)))
	return err == nil && b
}

// Validate checks cfg without doing I/O: the endpoint URL, the headers (also those of the
// environment) and the sample ratio. A disabled configuration (no endpoint) is valid. Errors wrap
// ErrInvalid (as a *ConfigError) and name the setting and the fix.
func Validate(cfg Config) error {
	cfg = cfg.withDefaults()
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return invalid("sample_ratio", "%g is out of range: use a fraction in (0, 1], e.g. 0.1 to record one turn in ten", cfg.SampleRatio)
	}
	if !Enabled(cfg) {
		return nil
	}
	if _, err := cfg.endpointURL(); err != nil {
		return err
	}
	_, err := cfg.headers()
	return err
}

// endpointURL resolves the URL spans are POSTed to.
func (c Config) endpointURL() (string, error) {
	if ep := strings.TrimSpace(c.Endpoint); ep != "" {
		return resolveBase("endpoint", ep, c.Insecure, true)
	}
	if ep := strings.TrimSpace(c.Getenv(EnvTracesEndpoint)); ep != "" {
		return resolveBase(EnvTracesEndpoint, ep, false, false)
	}
	if ep := strings.TrimSpace(c.Getenv(EnvEndpoint)); ep != "" {
		return resolveBase(EnvEndpoint, ep, false, true)
	}
	return "", ErrNoEndpoint
}

// resolveBase parses an endpoint; base appends /v1/traces unless the path already ends in it.
func resolveBase(name, raw string, insecure, base bool) (string, error) {
	bad := func(why string) error {
		return invalid(name, "%q %s (write it like http://otel-collector:4318)", raw, why)
	}
	s := raw
	if !strings.Contains(s, "://") {
		if insecure {
			s = "http://" + s
		} else {
			s = "https://" + s
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", bad("is not a URL")
	}
	switch u.Scheme {
	case "http":
	case "https":
		if insecure {
			return "", bad("uses https but insecure is set: write http://… for a plain-HTTP collector, or drop insecure")
		}
	default:
		return "", bad("must be an http:// or https:// URL (OTLP over HTTP; gRPC endpoints on :4317 are not supported)")
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", bad("has no host")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", bad("must not carry a query, fragment or credentials (put credentials in headers)")
	}
	switch {
	case base && !strings.HasSuffix(strings.TrimRight(u.Path, "/"), tracesPath):
		u.Path = path.Join("/", u.Path, tracesPath)
	case u.Path == "":
		u.Path = "/"
	}
	return u.String(), nil
}

// headers merges the environment's headers and Config.Headers (which win).
func (c Config) headers() (map[string]string, error) {
	h := map[string]string{}
	for _, name := range []string{EnvHeaders, EnvTracesHeaders} {
		if err := parseHeaders(name, c.Getenv(name), h); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := strings.TrimSpace(k)
		if !validHeaderName(name) {
			return nil, invalid("headers", "%q is not a valid HTTP header name", k)
		}
		h[name] = c.Headers[k]
	}
	return h, nil
}

// parseHeaders parses the W3C-baggage-like "k1=v1,k2=v2" of OTEL_EXPORTER_OTLP_HEADERS; values
// are URL-decoded. Errors name the variable and the entry's key, never a value (they hold keys).
func parseHeaders(name, raw string, into map[string]string) error {
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	for i, pair := range strings.Split(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !validHeaderName(k) {
			return invalid(name, "entry %d is not key=value with a valid header name (write it like api-key=secret,x-team=ops)", i+1)
		}
		dv, err := url.PathUnescape(v)
		if err != nil {
			return invalid(name, "the value of %q is not URL-encoded correctly (encode %% as %%25)", k)
		}
		into[k] = strings.TrimSpace(dv)
	}
	return nil
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r >= 0x7f || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return http.CanonicalHeaderKey(k) != ""
}

// ConfigError is a bad setting: Field is the Config field in snake case (endpoint, headers,
// sample_ratio) or the name of the environment variable that holds the bad value.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	return "tracing: invalid configuration: " + e.Field + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ConfigError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// EndpointURL is the URL spans are POSTed to under cfg (for logs: it never holds credentials).
// It returns ErrNoEndpoint when tracing is off, a *ConfigError for a bad endpoint.
func EndpointURL(cfg Config) (string, error) { return cfg.withDefaults().endpointURL() }

// ServiceName is the service.name spans carry under cfg.
func ServiceName(cfg Config) string { return cfg.withDefaults().ServiceName }
