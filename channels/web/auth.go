package web

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Auth is the gateway HTTP server's one authentication rule, for every route but the open ones
// (the probes, and platform endpoints that check their own signatures).
//
// With a token (http.auth_token) a request must present it: "Authorization: Bearer <token>", or
// Basic authentication with the token as the password, so that a browser can log in. Without
// one the server answers only loopback names (the configuration refuses a token-less server that
// answers any other name), and a request passes only when it came from this machine, names it by
// a loopback name or address (LocalRequest), and carries no header a proxy adds: a proxy in front
// of a token-less gateway does not open it to whoever reaches the proxy.
type Auth struct {
	token string
	// pathTokens admit a request to one path with another token (/metrics: http.metrics_token).
	pathTokens map[string]string
	open       map[string]bool
}

// NewAuth returns the rule for token ("" for none). pathTokens maps a path (exact) to another
// token that also admits a request to it; open lists the paths (exact) served to everyone.
func NewAuth(token string, pathTokens map[string]string, open ...string) *Auth {
	a := &Auth{token: token, pathTokens: map[string]string{}, open: map[string]bool{}}
	for p, t := range pathTokens {
		if t != "" {
			a.pathTokens[p] = t
		}
	}
	for _, p := range open {
		a.open[p] = true
	}
	return a
}

// forwardHeaders are the headers reverse proxies add to the requests they forward.
var forwardHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Via"}

// Allows reports whether r is authenticated by the rule (see Auth). It does not look at the
// open paths or the path tokens: it is what the console counts as "the operator".
func (a *Auth) Allows(r *http.Request) bool {
	if a.token != "" {
		return tokenMatches(presented(r), a.token)
	}
	if !LocalRequest(r) {
		return false
	}
	for _, h := range forwardHeaders {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	return true
}

// allowsPath is Allows, the path's own token, or an open path.
func (a *Auth) allowsPath(r *http.Request) bool {
	if a.open[r.URL.Path] {
		return true
	}
	if t, ok := a.pathTokens[r.URL.Path]; ok && tokenMatches(presented(r), t) {
		return true
	}
	return a.Allows(r)
}

// Guard serves next only to the requests the rule admits on their path; every other request is
// answered 401 (with a token: the browser may log in) or 403 (without one: it came through a
// proxy or from elsewhere), naming http.auth_token. Everything is guarded but the open paths, so a
// route added later is guarded without anyone remembering to.
func (a *Auth) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.allowsPath(r) {
			next.ServeHTTP(w, r)
			return
		}
		if a.token != "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="echogate"`)
			writeError(w, &apiError{status: http.StatusUnauthorized,
				msg: "authentication required: send Authorization: Bearer <http.auth_token> (in a browser: any user name, the token as password)"})
			return
		}
		writeError(w, &apiError{status: http.StatusForbidden,
			msg: "this request came through a proxy or from another machine, and this gateway has no http.auth_token: set http.auth_token (ECHOGATE_HTTP_AUTH_TOKEN) and send it as Authorization: Bearer <token>, or use the console on this machine at http://localhost"})
	})
}

// presented is the token a request carries: Bearer, or Basic's password.
func presented(r *http.Request) string {
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return strings.TrimPrefix(h, "Bearer ")
	}
	if _, pw, ok := r.BasicAuth(); ok {
		return pw
	}
	return ""
}

func tokenMatches(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
