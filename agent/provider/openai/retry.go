package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/backoff"
)

// respInfo records what the transport saw of one attempt's HTTP response: go-openai drops the
// headers of error responses, and Retry-After lives there.
type respInfo struct {
	sent       bool
	status     int
	retryAfter time.Duration
	hasRetry   bool
	requestID  string
}

type infoKey struct{}

// captureDoer is the HTTP doer given to go-openai: it fills the attempt's respInfo from ctx.
type captureDoer struct{ c *http.Client }

func (d captureDoer) Do(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(infoKey{}).(*respInfo)
	if info != nil {
		info.sent = true
	}
	resp, err := d.c.Do(req)
	if err != nil || info == nil {
		return resp, err
	}
	info.status = resp.StatusCode
	info.requestID = resp.Header.Get("X-Request-Id")
	info.retryAfter, info.hasRetry = parseRetryAfter(resp.Header, time.Now())
	return resp, nil
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an HTTP date).
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// callbackError marks an error returned by the caller's onDelta: it is returned as-is, wrapped.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// idleTimeout is an attempt that saw no data for Config.Timeout.
type idleTimeout struct{ d time.Duration }

func (e *idleTimeout) Error() string { return fmt.Sprintf("no data for %s", e.d) }
func (e *idleTimeout) Unwrap() error { return ErrTimeout }

// errTruncated: the stream ended (EOF) without a finish reason.
var errTruncated = errors.New("the stream ended without a finish reason (connection closed early)")

// attemptFunc runs one attempt; delivered is the number of characters handed to the caller.
type attemptFunc func(ctx context.Context) (delivered int, err error)

// idleWatch is an attempt's idle timeout: it cancels the attempt's context once the endpoint has
// been silent for Config.Timeout. The clock runs only while the provider waits for the endpoint:
// it is paused while the caller's onDelta runs, so a slow consumer (a chat platform's rate
// limit, say) is never mistaken for a stalled endpoint.
type idleWatch struct {
	t     timer
	d     time.Duration
	fired atomic.Bool
}

// watchIdle derives an attempt context from ctx under a running idle timeout. stop releases the
// timer and the context; call it when the attempt ends.
func (p *Provider) watchIdle(ctx context.Context) (actx context.Context, w *idleWatch, stop func()) {
	actx, cancel := context.WithCancel(ctx)
	w = &idleWatch{d: p.cfg.Timeout}
	w.t = p.newTimer(w.d, func() {
		w.fired.Store(true)
		cancel()
	})
	return actx, w, func() {
		w.t.Stop()
		cancel()
	}
}

// wait restarts the clock: the provider is about to wait for the endpoint.
func (w *idleWatch) wait() { w.t.Reset(w.d) }

// pause stops the clock: the provider got data and runs the caller's code.
func (w *idleWatch) pause() { w.t.Stop() }

// timedOut reports whether the timeout cancelled the attempt.
func (w *idleWatch) timedOut() bool { return w.fired.Load() }

// retry runs fn until it succeeds, fails for good, or the retries are spent. Only attempts that
// delivered nothing are retried.
func (p *Provider) retry(ctx context.Context, op, model string, fn attemptFunc) error {
	for attempt := 1; ; attempt++ {
		info := &respInfo{}
		delivered, err := fn(context.WithValue(ctx, infoKey{}, info))
		if err == nil {
			return nil
		}
		var cb *callbackError
		if errors.As(err, &cb) {
			return fmt.Errorf("openai: %s with %s: aborted by the caller after %d chars: %w", op, model, delivered, cb.err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("openai: %s with %s at %s: %w after %d chars", op, model, p.base, cerr, delivered)
		}
		c := p.classify(op, model, err, info)
		e := c.Error
		e.Attempts = attempt
		if delivered > 0 {
			e.Streamed = delivered
			e.kinds = []error{ErrStreamBroken}
			e.retryAfter = nil
			e.Hint = "the partial answer was kept; the turn can be retried"
			return e
		}
		retryable := c.retryable
		wait := p.backoff(attempt)
		if info.hasRetry && e.Status == http.StatusTooManyRequests {
			wait = info.retryAfter
			if wait > p.cfg.MaxRetryAfter {
				retryable = false
			}
		}
		if e.Status == http.StatusTooManyRequests {
			e.retryAfter = &echogate.RetryAfterError{After: wait, Err: e.Err}
		}
		if !retryable || attempt > p.cfg.MaxRetries {
			return e
		}
		p.log.Warn("openai: retrying", "op", op, "model", model, "attempt", attempt, "status", e.Status, "wait", wait, "err", e.Message)
		if serr := p.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("openai: %s with %s: waiting %s to retry after %q: %w", op, model, wait, e.Message, serr)
		}
	}
}

// backoff is the wait before retry number attempt (1-based): base·2^(attempt-1) capped at
// MaxRetryDelay, with "equal jitter" (between half and all of it; internal/backoff).
func (p *Provider) backoff(attempt int) time.Duration {
	return backoff.Policy{
		Initial: p.cfg.RetryBaseDelay,
		Max:     p.cfg.MaxRetryDelay,
		Jitter:  func(max time.Duration) time.Duration { return time.Duration(p.jitter() * float64(max)) },
	}.Delay(attempt)
}

// classified is an Error with its retry decision.
type classified struct {
	*Error
	retryable bool
}

// classify turns an attempt's error into an *Error: its kind, whether it is worth retrying and
// what the user should fix.
func (p *Provider) classify(op, model string, err error, info *respInfo) classified {
	e := &Error{Op: op, Model: model, BaseURL: p.base, Err: err, RequestID: info.requestID, Message: err.Error()}
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	var idle *idleTimeout
	switch {
	case errors.As(err, &apiErr):
		e.Status = apiErr.HTTPStatusCode
		e.Message = apiErr.Message
		e.Code = errorCode(apiErr.Code)
		if e.Code == "" {
			e.Code = apiErr.Type
		}
	case errors.As(err, &reqErr):
		e.Status = reqErr.HTTPStatusCode
		e.Message = strings.TrimSpace(truncate(string(reqErr.Body), 300))
		if e.Message == "" {
			e.Message = http.StatusText(reqErr.HTTPStatusCode)
		}
	case errors.As(err, &idle):
		e.Message = fmt.Sprintf("no data for %s", idle.d)
		e.kinds = []error{agent.ErrUnavailable, ErrTimeout}
		e.Hint = "the endpoint is slow or stalled; raise the provider timeout if the model is known to be slow"
		return classified{e, true}
	case !info.sent:
		// Failed before any request was made: go-openai rejected the request itself.
		e.kinds = []error{ErrBadRequest}
		e.Hint = "the request could not be built; check the model's parameters"
		return classified{e, false}
	}
	if e.Status == 0 && info.status >= 400 {
		e.Status = info.status
	}
	if c, ok := p.classifyStatus(e, model); ok {
		return c
	}
	return p.classifyFailedOK(e, err, apiErr != nil)
}

// classifyStatus classifies e by its HTTP status (4xx and 5xx, with the code where it decides),
// with the hint that tells the operator what to fix; ok is false for a status below 400.
func (p *Provider) classifyStatus(e *Error, model string) (c classified, ok bool) {
	switch s := e.Status; {
	case s == http.StatusUnauthorized:
		e.kinds = []error{ErrAuth}
		e.Hint = "the endpoint rejected the API key: check OPENAI_API_KEY"
		return classified{e, false}, true
	case s == http.StatusForbidden:
		e.kinds = []error{ErrAuth}
		e.Hint = fmt.Sprintf("the API key may not use model %q: check the key's project permissions and OPENAI_API_KEY", model)
		return classified{e, false}, true
	case s == http.StatusNotFound:
		e.kinds = []error{ErrModelNotFound}
		e.Hint = fmt.Sprintf("model %q not found at %s: check ECHOGATE_MODEL / models.default (or the embeddings model) and that OPENAI_BASE_URL ends in /v1", model, p.base)
		return classified{e, false}, true
	case s == http.StatusTooManyRequests && e.Code == "insufficient_quota":
		e.kinds = []error{agent.ErrUnavailable}
		e.Hint = "the account's quota is exhausted: check the billing of the API key's account"
		return classified{e, false}, true
	case s == http.StatusTooManyRequests:
		e.kinds = []error{agent.ErrUnavailable}
		e.Hint = "rate limited by the endpoint"
		return classified{e, true}, true
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooEarly, s >= 500:
		e.kinds = []error{agent.ErrUnavailable}
		e.Hint = "the endpoint is failing: try again later or configure a fallback model"
		return classified{e, true}, true
	case s >= 400:
		if e.Code == "context_length_exceeded" || strings.Contains(e.Message, "maximum context length") {
			e.kinds = []error{ErrContextTooLong, ErrBadRequest}
			e.Hint = "the conversation is longer than the model's context window: compress the history or use a model with a larger window"
			return classified{e, false}, true
		}
		e.kinds = []error{ErrBadRequest}
		e.Hint = fmt.Sprintf("the endpoint rejected the request: check that model %q supports the tools, images and parameters sent", model)
		return classified{e, false}, true
	}
	return classified{}, false
}

// classifyFailedOK classifies a 200 that went wrong: an error event inside the stream (inStream),
// a dropped or truncated connection, a transport error, garbage in a chunk. All are worth another
// attempt.
func (p *Provider) classifyFailedOK(e *Error, err error, inStream bool) classified {
	e.kinds = []error{agent.ErrUnavailable}
	var netErr net.Error
	switch {
	case inStream:
		e.Hint = "the endpoint reported an error inside the stream"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errTruncated), errors.Is(err, io.EOF):
		e.Hint = "the connection closed before the answer was complete"
	case errors.As(err, &netErr):
		e.Hint = fmt.Sprintf("cannot reach %s: check OPENAI_BASE_URL and the network", p.base)
	default:
		e.Hint = "unexpected failure talking to the endpoint"
	}
	return classified{e, true}
}

func errorCode(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case int:
		if v == 0 { // a JSON null code decodes as 0
			return ""
		}
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}
