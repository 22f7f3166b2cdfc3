package mcp

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long closing a stdio session waits for the server to exit after its stdin
// was closed, before SIGTERM (and again before SIGKILL).
const stopGrace = 3 * time.Second

// passEnv are the variables of the gateway's environment a stdio server inherits: what programs
// need to run, nothing that could hold a secret.
var passEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR", "SYSTEMROOT", "WINDIR"}

// minimalEnv returns the stdio server's environment: passEnv from the gateway, then the configured
// variables (which win), sorted for determinism.
func minimalEnv(extra map[string]string) []string {
	env := map[string]string{}
	for _, k := range passEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// stdioProcess is the child process of one stdio session.
type stdioProcess struct {
	cmd    *exec.Cmd
	stderr *tailWriter
}

// newStdioTransport builds the command of a stdio server. The process starts when the SDK
// connects.
func newStdioTransport(cfg ServerConfig, onLine func(string)) (sdk.Transport, *stdioProcess) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = minimalEnv(cfg.Env)
	cmd.Dir = cfg.Dir
	tw := &tailWriter{keep: 5, onLine: onLine, secrets: secretValues(cfg.Env)}
	cmd.Stderr = tw
	// A grandchild that keeps stderr open must not make Wait hang.
	cmd.WaitDelay = stopGrace
	setProcessGroup(cmd)
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: stopGrace}, &stdioProcess{cmd: cmd, stderr: tw}
}

// exitDetail describes how the process ended with the last lines of its stderr, for the
// server's last error. Call it after the session was closed.
func (p *stdioProcess) exitDetail() string {
	var b strings.Builder
	if st := p.cmd.ProcessState; st != nil {
		b.WriteString(st.String())
	}
	if tail := p.stderr.Tail(); tail != "" {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("stderr: ")
		b.WriteString(tail)
	}
	return b.String()
}

// cleanup kills what is left of the process group (helpers the server started).
func (p *stdioProcess) cleanup() { killProcessGroup(p.cmd) }

// tailWriter receives a child's stderr: each line goes to onLine and the last `keep` lines are
// kept for error messages. Lines are capped at maxLine bytes. The values of the server's
// configured environment (its API keys, typically) are masked in both: a server that prints
// its own credentials in an error does not put them in the log, the status of the server or
// the console.
type tailWriter struct {
	keep    int
	onLine  func(string)
	secrets []string

	mu    sync.Mutex
	buf   []byte
	lines []string
}

const maxLine = 512

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) > maxLine {
				w.line(string(w.buf[:maxLine]))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		line := w.buf[:i]
		if len(line) > maxLine {
			line = line[:maxLine]
		}
		w.line(string(line))
		w.buf = w.buf[i+1:]
	}
}

func (w *tailWriter) line(s string) {
	s = strings.TrimRight(s, "\r")
	if strings.TrimSpace(s) == "" {
		return
	}
	s = w.mask(s)
	if w.onLine != nil {
		w.onLine(s)
	}
	w.lines = append(w.lines, s)
	if len(w.lines) > w.keep {
		w.lines = w.lines[len(w.lines)-w.keep:]
	}
}

// mask replaces the configured values in s.
func (w *tailWriter) mask(s string) string {
	for _, v := range w.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// minSecretLen is the shortest configured value masked in a server's stderr: shorter ones
// ("1", "true", a port) are settings, and masking them would garble the lines.
const minSecretLen = 8

// secretValues returns the configured environment's values worth masking, longest first (so a
// value containing another is masked whole).
func secretValues(env map[string]string) []string {
	var out []string
	for _, v := range env {
		if len(v) >= minSecretLen {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Tail returns the last lines joined by " | ".
func (w *tailWriter) Tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := w.lines
	if len(w.buf) > 0 {
		lines = append(lines[:len(lines):len(lines)], w.mask(string(w.buf)))
	}
	return strings.Join(lines, " | ")
}

// newHTTPTransport builds the streamable-HTTP transport of a URL server: its own http.Client
// (no overall timeout: the server's event stream is long-lived; dial, TLS and response-header
// timeouts bound a dead server) that adds the configured headers to every request.
//
// Call the returned client's CloseIdleConnections when the session is over.
func newHTTPTransport(cfg ServerConfig, connectTimeout time.Duration) (*sdk.StreamableClientTransport, *http.Client) {
	base := newBaseTransport(connectTimeout)
	h := make(http.Header, len(cfg.Headers))
	for k, v := range cfg.Headers {
		h.Set(strings.TrimSpace(k), v)
	}
	client := &http.Client{Transport: &headerTripper{base: base, headers: h}}
	return &sdk.StreamableClientTransport{
		Endpoint:   cfg.URL,
		HTTPClient: client,
		// The supervisor reconnects with its own backoff; the SDK retries a broken event
		// stream only briefly before giving the session up.
		MaxRetries: 2,
	}, client
}

// newBaseTransport is the HTTP transport of MCP and OAuth requests: dial, TLS and
// response-header timeouts bound a dead server.
func newBaseTransport(connectTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: connectTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// headerTripper adds fixed headers to every request.
type headerTripper struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	for k, vs := range t.headers {
		r.Header[k] = append([]string(nil), vs...)
	}
	return t.base.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base transport.
func (t *headerTripper) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// withTimeout is context.WithTimeout that treats d <= 0 as no bound.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
