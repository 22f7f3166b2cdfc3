package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// apiError is an HTTP error answered as {"error": msg}.
type apiError struct {
	status     int
	msg        string
	retryAfter time.Duration // > 0: a Retry-After header
	allow      string        // 405: the Allow header
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.allow != "" {
		w.Header().Set("Allow", e.allow)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((e.retryAfter+time.Second-1)/time.Second), 10))
	}
	writeJSON(w, e.status, map[string]string{"error": e.msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func methodNotAllowed(r *http.Request, allow string) *apiError {
	return &apiError{
		status: http.StatusMethodNotAllowed,
		msg:    fmt.Sprintf("method %s is not allowed on %s: use %s", r.Method, r.URL.Path, allow),
		allow:  allow,
	}
}

// crossOrigin is the standard library's cross-origin protection (Fetch Metadata's
// Sec-Fetch-Site, else the Origin compared with the Host), with no trusted origins.
var crossOrigin = http.NewCrossOriginProtection()

// checkOrigin refuses browser requests sent from another site: a page elsewhere must not make
// the gateway act for its visitor. It is called for state-changing methods only (ReadMutation
// checks the method first; the protection lets GET, HEAD and OPTIONS pass).
func checkOrigin(r *http.Request) *apiError {
	if crossOrigin.Check(r) == nil {
		return nil
	}
	if o := r.Header.Get("Origin"); o != "" {
		return &apiError{status: http.StatusForbidden, msg: fmt.Sprintf(
			"cross-origin request from %q refused: use the chat page served by the gateway at %s, or call the API without an Origin header", o, r.Host)}
	}
	return &apiError{status: http.StatusForbidden, msg: fmt.Sprintf(
		"cross-site request refused: use the chat page served by the gateway at %s", r.Host)}
}

// decodeBody decodes the JSON object of r into dst, which must be a pointer to a struct with json
// tags; fields lists the accepted field names for error messages. Every failure is a 4xx
// apiError that names the problem and the fix.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, dst any, fields string) *apiError {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return &apiError{status: http.StatusUnsupportedMediaType, msg: fmt.Sprintf(
			"content type %q is not supported: send a JSON body with the header Content-Type: application/json", ct)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf(
				"request body is over %d bytes: send less (the accepted fields are %s)", limit, fields)}
		}
		if bodyTimedOut(err) {
			return &apiError{status: http.StatusRequestTimeout, msg: "the request body did not arrive within the time allowed (http.body_timeout): send the whole body at once"}
		}
		return badRequest("reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("request body is empty: send a JSON object with the fields %s", fields)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(body, err, fields)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(body, dec.InputOffset())
		return badRequest("unexpected data after the JSON object at line %d, column %d: send exactly one JSON object", line, col)
	}
	return nil
}

func jsonError(body []byte, err error, fields string) *apiError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(body, syn.Offset-1) // Offset counts the offending byte
		return badRequest("malformed JSON at line %d, column %d: %s: send a JSON object with the fields %s",
			line, col, strings.TrimPrefix(syn.Error(), "json: "), fields)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: the body ends before the object is complete: send a whole JSON object with the fields %s", fields)
	case errors.As(err, &typ):
		line, col := position(body, typ.Offset)
		if typ.Field == "" {
			return badRequest("the body is a JSON %s, not an object (line %d, column %d): send a JSON object with the fields %s",
				typ.Value, line, col, fields)
		}
		return badRequest("field %q must be a %s, not a JSON %s (line %d, column %d)", typ.Field, typ.Type, typ.Value, line, col)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badRequest("unknown field %s: the accepted fields are %s", name, fields)
	}
	return badRequest("malformed JSON: %v: send a JSON object with the fields %s", err, fields)
}

// position converts a byte offset into a 1-based line and column.
func position(body []byte, off int64) (line, col int) {
	if off > int64(len(body)) {
		off = int64(len(body))
	}
	if off < 0 {
		off = 0
	}
	before := body[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
