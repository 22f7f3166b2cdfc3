package agenttest

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
)

func writeAnswerError(w http.ResponseWriter, a Answer) {
	if a.RetryAfter > 0 {
		secs := int64(math.Ceil(a.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(a.RetryAfter.Milliseconds(), 10))
	}
	msg, typ, code := a.ErrorMessage, a.ErrorType, a.ErrorCode
	dmsg, dtyp, dcode := defaultError(a.Status)
	if msg == "" {
		msg = dmsg
	}
	if typ == "" {
		typ = dtyp
	}
	if code == "" {
		code = dcode
	}
	writeError(w, a.Status, msg, typ, code)
}

func defaultError(status int) (msg, typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "You are not allowed to access this resource.", "invalid_request_error", "unsupported_country_region_territory"
	case status == http.StatusNotFound:
		return "The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
	case status >= 500:
		return "The server had an error while processing your request. Sorry about that!", "server_error", ""
	}
	return "Invalid request.", "invalid_request_error", ""
}

func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, wireError{Error: wireErrorBody{Message: msg, Type: typ, Code: c}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// hijackClose closes the connection under the response abruptly: the client sees a truncated
// chunked body (io.ErrUnexpectedEOF), as when a proxy or the server dies mid-stream.
func hijackClose(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Cannot hijack (HTTP/2): abort the handler, which resets the stream.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
