package web

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// BodyDeadline makes every request body arrive within d: the connection's read deadline is set
// to now+d before the handler runs and cleared once the body is read to its end, so a response
// that streams for long afterwards (a chat turn's events) keeps its connection. A client that
// sends its headers and then the body a byte now and then is cut off at d: the handler's read
// fails (decodeBody answers 408) and the server closes the connection instead of reading the
// rest. Requests without a body are left alone; d <= 0 disables it.
func BodyDeadline(next http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r) // not a network connection (a test recorder)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the read deadline when the body has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyTimedOut reports a body read that failed because the body did not arrive in time.
func bodyTimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
