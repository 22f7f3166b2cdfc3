package channels

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestRateLimitAdvice(t *testing.T) {
	limited := func(retry string) error {
		h := http.Header{}
		if retry != "" {
			h.Set("Retry-After", retry)
		}
		return fmt.Errorf("call: %w", &StatusError{Status: http.StatusTooManyRequests, Header: h})
	}
	for name, tt := range map[string]struct {
		err              error
		ok               bool
		detail, fixStart string
	}{
		"retry after 30": {limited("30"), true, "auth.test: rate limited by Slack (HTTP 429), retry after 30s", "wait 30s and run"},
		"fractional":     {limited("1.6"), true, "auth.test: rate limited by Slack (HTTP 429), retry after 2s", "wait 2s and run"},
		"no header":      {limited(""), true, "auth.test: rate limited by Slack (HTTP 429)", "wait a minute and run"},
		"a 500":          {&StatusError{Status: 500, Header: http.Header{}}, false, "", ""},
		"network":        {errors.New("dial tcp: refused"), false, "", ""},
		"nil":            {nil, false, "", ""},
	} {
		detail, fix, ok := RateLimitAdvice("Slack", "auth.test", tt.err)
		if ok != tt.ok || detail != tt.detail || len(fix) < len(tt.fixStart) || fix[:len(tt.fixStart)] != tt.fixStart {
			t.Errorf("%s: RateLimitAdvice = %q, %q, %v, want %q, %q…, %v", name, detail, fix, ok, tt.detail, tt.fixStart, tt.ok)
		}
	}
}

func TestAPIBase(t *testing.T) {
	for _, tt := range []struct{ configured, want string }{
		{"", "https://slack.com/api/"},
		{"http://127.0.0.1:9/api", "http://127.0.0.1:9/api/"},
		{"http://127.0.0.1:9/api/", "http://127.0.0.1:9/api/"},
	} {
		if got := APIBase(tt.configured, "https://slack.com/api/"); got != tt.want {
			t.Errorf("APIBase(%q) = %q, want %q", tt.configured, got, tt.want)
		}
	}
}
