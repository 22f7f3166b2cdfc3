package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// HostPolicy decides which Host headers the gateway's HTTP server answers. A page on another
// site can make a browser send requests to 127.0.0.1 by rebinding its own name to that address
// (DNS rebinding); the request then carries that site's name in Host, which this policy refuses.
// A request names the server acceptably when its Host is an IP address the server listens on
// (any address when it listens on all of them), a loopback name (localhost, *.localhost), the
// bind name, or a name in http.allowed_hosts ("chat.example.com", or "*.example.com" for its
// subdomains). The port is not compared: a rebinding page reaches the same port anyway.
type HostPolicy struct {
	bindIP      netip.Addr // invalid when the bind host is a name or unspecified
	unspecified bool       // the server listens on every address
	names       map[string]bool
	suffixes    []string // ".example.com" for "*.example.com"
}

// NewHostPolicy returns the policy of a server bound to bind (host:port) with the extra names of
// http.allowed_hosts. It does no I/O. An entry that is not a host name is an error naming it.
func NewHostPolicy(bind string, allowed []string) (*HostPolicy, error) {
	p := &HostPolicy{names: map[string]bool{}}
	host, _, err := net.SplitHostPort(bind)
	if err != nil {
		host = bind
	}
	host = normHost(host)
	if ip, err := netip.ParseAddr(host); err == nil {
		p.bindIP = ip.Unmap()
		p.unspecified = ip.IsUnspecified()
	} else if host == "" {
		p.unspecified = true
	} else {
		p.names[host] = true
	}
	for _, a := range allowed {
		h := normHost(a)
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			if !validName(rest) {
				return nil, fmt.Errorf("%q is not a host name pattern: write a name such as chat.example.com or *.example.com", a)
			}
			p.suffixes = append(p.suffixes, "."+rest)
			continue
		}
		if _, err := netip.ParseAddr(h); err != nil && !validName(h) {
			return nil, fmt.Errorf("%q is not a host name: write a name such as chat.example.com (no scheme, path or port)", a)
		}
		p.names[h] = true
	}
	return p, nil
}

// Allows reports whether a request with this Host header (host or host:port) is served.
func (p *HostPolicy) Allows(hostport string) bool {
	host := hostOnly(hostport)
	if host == "" {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		return ip.IsLoopback() || p.unspecified || ip == p.bindIP
	}
	if IsLoopbackName(host) || p.names[host] {
		return true
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// Guard answers 421 Misdirected Request to requests whose Host the policy refuses, except on
// the exempt paths (exact matches: /slack/events checks its own signature, probes use any name).
func (p *HostPolicy) Guard(next http.Handler, exempt ...string) http.Handler {
	skip := map[string]bool{}
	for _, e := range exempt {
		skip[e] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if skip[r.URL.Path] || p.Allows(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, &apiError{status: http.StatusMisdirectedRequest, msg: fmt.Sprintf(
			"this server does not answer for the host %q: reach it by its address or a loopback name, or add the name to http.allowed_hosts (ECHOGATE_HTTP_ALLOWED_HOSTS)",
			r.Host)})
	})
}

// IsLoopbackName reports names that always mean this machine.
func IsLoopbackName(host string) bool {
	h := normHost(host)
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain"
}

// LocalRequest reports a request that came from this machine and names it by a loopback name or
// address: what the console counts as authenticated when no http.auth_token is set.
func LocalRequest(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return false
	}
	h := hostOnly(r.Host)
	if IsLoopbackName(h) {
		return true
	}
	hip, err := netip.ParseAddr(h)
	return err == nil && hip.Unmap().IsLoopback()
}

// ReadMutation is the one check every state-changing endpoint shares: the method, the Origin (a
// browser on another site is refused) and a JSON body of at most limit bytes with only the listed
// fields, decoded into dst. On failure it answers the error and returns false.
func ReadMutation(w http.ResponseWriter, r *http.Request, method string, limit int64, dst any, fields string) bool {
	if r.Method != method {
		writeError(w, methodNotAllowed(r, method))
		return false
	}
	if e := checkOrigin(r); e != nil {
		writeError(w, e)
		return false
	}
	if e := decodeBody(w, r, limit, dst, fields); e != nil {
		writeError(w, e)
		return false
	}
	return true
}

func hostOnly(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return normHost(host)
}

func normHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
