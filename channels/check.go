package channels

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Checker is an adapter's connection check, as `echogate doctor` runs it: it calls the
// platform's API with the configured tokens and reports what works and what to fix. It blocks
// until each call answered or ctx ended, and changes nothing on the platform.
type Checker interface {
	Check(ctx context.Context) []Finding
}

// Finding is one result of a check: passed (OK), skipped (nothing to check), or a problem with
// the fix to apply.
type Finding struct {
	Name    string // e.g. "slack:bot_token"
	OK      bool
	Skipped bool
	Detail  string
	Fix     string
}

// APIBase returns the API base URL a check calls: configured, else def, ending in "/".
func APIBase(configured, def string) string {
	if configured == "" {
		configured = def
	}
	if !strings.HasSuffix(configured, "/") {
		configured += "/"
	}
	return configured
}

// StatusError is a non-200 answer of an API a check calls.
type StatusError struct {
	Status int
	Header http.Header
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d", e.Status) }

// RateLimitAdvice returns the detail and fix of a check whose call (e.g. "auth.test") the
// service answered with HTTP 429: a wait, not a network or configuration problem. ok is false
// when err is not such an answer.
func RateLimitAdvice(service, call string, err error) (detail, fix string, ok bool) {
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
		return "", "", false
	}
	wait := ""
	if s := se.Header.Get("Retry-After"); s != "" {
		if n, perr := strconv.ParseFloat(s, 64); perr == nil {
			wait = (time.Duration(n * float64(time.Second))).Round(time.Second).String()
		}
	}
	const busy = "; a rate limit is not a network or token problem. If it keeps happening, another process (a running gateway?) is using the same token heavily"
	detail = fmt.Sprintf("%s: rate limited by %s (HTTP 429)", call, service)
	if wait != "" {
		detail += ", retry after " + wait
		fix = fmt.Sprintf("wait %s and run `echogate doctor` again", wait) + busy
	} else {
		fix = "wait a minute and run `echogate doctor` again" + busy
	}
	return detail, fix, true
}
