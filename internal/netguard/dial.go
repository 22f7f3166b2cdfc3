package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Guard dials only addresses Refusal accepts (unless AllowPrivate, or the host is one of the
// trusted hosts). It resolves names itself so every candidate address is checked, then
// connects to the checked IP literal; the default dialer's Control hook checks the address
// actually connected to once more.
type Guard struct {
	allowPrivate bool
	trusted      map[string]bool
	resolver     Resolver
	// Dial connects to an already checked "ip:port". Tests replace it to reach httptest
	// servers behind "public" addresses.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTrusted connects to a trusted host (no address check).
	DialTrusted func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewGuard returns a guard. r nil means net.DefaultResolver. trusted are host names or IP
// literals (no port) that may be non-public: endpoints the operator configured explicitly,
// such as a platform API on a private proxy or a local test fake.
func NewGuard(allowPrivate bool, r Resolver, trusted ...string) *Guard {
	if r == nil {
		r = net.DefaultResolver
	}
	g := &Guard{allowPrivate: allowPrivate, resolver: r, trusted: map[string]bool{}}
	for _, h := range trusted {
		if h = normalizeHost(h); h != "" {
			g.trusted[h] = true
		}
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	plain := *d
	if !allowPrivate {
		d.Control = ControlRefusePrivate
	}
	g.Dial = d.DialContext
	g.DialTrusted = plain.DialContext
	return g
}

func normalizeHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// Trusted reports whether host may be dialled whatever its address.
func (g *Guard) Trusted(host string) bool {
	return g.allowPrivate || g.trusted[normalizeHost(host)]
}

// DialContext is the http.Transport dial function. It fails with a *RefusedError when every
// address of the host is refused; it blocks until connected, refused, or ctx ends.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: %w", addr, err)
	}
	if !g.allowPrivate && g.trusted[normalizeHost(host)] {
		return g.DialTrusted(ctx, network, addr)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		if !g.allowPrivate && IsLocalName(host) {
			return nil, &RefusedError{Host: host, Reason: "a local host name"}
		}
		addrs, err := g.resolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				ips = append(ips, ip.Unmap())
			}
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("netguard: %s has no IP address", host)
		}
	}
	var refused *RefusedError
	var errs []error
	for _, ip := range ips {
		if (network == "tcp4" && !ip.Unmap().Is4()) || (network == "tcp6" && ip.Is4()) {
			continue
		}
		if !g.allowPrivate {
			if why := Refusal(ip); why != "" {
				if refused == nil {
					refused = &RefusedError{Host: host, IP: ip, Reason: why}
				}
				continue
			}
		}
		conn, err := g.Dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if refused != nil {
		return nil, refused
	}
	return nil, fmt.Errorf("netguard: %s has no %s address", host, network)
}
