package openai

import (
	"errors"
	"fmt"
	"strings"

	"github.com/echogate/echogate"
)

// Sentinel errors, wrapped by the errors Generate and Embed return. Errors that mean "try another
// model" (429, 5xx, timeouts, unreachable endpoint) also wrap agent.ErrUnavailable.
var (
	// ErrAuth: the endpoint rejected the API key (401) or its permissions (403).
	ErrAuth = errors.New("openai: authentication failed")
	// ErrModelNotFound: the endpoint does not know the model (404).
	ErrModelNotFound = errors.New("openai: model not found")
	// ErrBadRequest: the endpoint or the provider rejected the request as malformed (400, 422, a
	// message or tool that cannot be mapped).
	ErrBadRequest = errors.New("openai: bad request")
	// ErrContextTooLong: the conversation does not fit the model's context window.
	ErrContextTooLong = errors.New("openai: context window exceeded")
	// ErrStreamBroken: the stream failed after fragments were delivered; it was not retried
	// because the caller already saw part of the answer.
	ErrStreamBroken = errors.New("openai: stream broke")
	// ErrTimeout: no data arrived within Config.Timeout.
	ErrTimeout = errors.New("openai: timed out waiting for data")
)

// Error is a failed call to the endpoint. Its chain holds the kind (ErrAuth, ErrModelNotFound,
// agent.ErrUnavailable, …), a *echogate.RetryAfterError on 429, and the underlying cause.
type Error struct {
	Op        string // "chat" or "embed"
	Model     string
	BaseURL   string
	Status    int    // HTTP status; 0 for transport errors and errors inside a stream
	Code      string // OpenAI error code, e.g. "invalid_api_key", "context_length_exceeded"
	RequestID string // x-request-id of the failed response, for the provider's support
	Attempts  int
	Streamed  int    // characters delivered before the stream broke (ErrStreamBroken)
	Message   string // the endpoint's message or the cause's text
	Hint      string // what to fix
	Err       error  // underlying cause

	kinds      []error
	retryAfter *echogate.RetryAfterError
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai: %s with %s at %s", e.Op, e.Model, e.BaseURL)
	if e.Streamed > 0 {
		fmt.Fprintf(&b, ": stream broke after %d chars", e.Streamed)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.Status > 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	if msg := strings.TrimRight(e.Message, ". \n"); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if e.retryAfter != nil {
		fmt.Fprintf(&b, " (retry after %s)", e.retryAfter.After)
	}
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap exposes the kinds, the rate-limit wait and the cause to errors.Is / errors.As.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, len(e.kinds)+1)
	out = append(out, e.kinds...)
	switch {
	case e.retryAfter != nil:
		out = append(out, e.retryAfter)
	case e.Err != nil:
		out = append(out, e.Err)
	}
	return out
}
