package web

import (
	"errors"
	"net/http"
	"os"
	"time"
)

// BodyDeadline makes every request body arrive within d: the connection's read deadline is set
// to now+d before the handler runs. A client that sends its headers and then the body a byte
// now and then is cut off at d: the handler's read fails (decodeBody answers 408) and the server
// closes the connection instead of reading the rest. Once a body has been read to its end,
// net/http clears the read deadline itself (it starts watching for the client going away), so
// a response that streams for long afterwards (a chat turn's events) keeps its connection;
// TestBodyDeadline holds it to that. Requests without a body are left alone; d <= 0 disables it.
func BodyDeadline(next http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			// A writer that is not a network connection (a test recorder) has no deadline.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		next.ServeHTTP(w, r)
	})
}

// bodyTimedOut reports a body read that failed because the body did not arrive in time.
func bodyTimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
