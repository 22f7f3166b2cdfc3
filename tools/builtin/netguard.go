package builtin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Resolver resolves host names; *net.Resolver satisfies it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// refusedError reports a destination http_fetch will not connect to.
type refusedError struct {
	host   string
	ip     netip.Addr // invalid when the host name itself was refused
	reason string
}

func (e *refusedError) Error() string {
	if !e.ip.IsValid() || e.host == e.ip.String() {
		if e.ip.IsValid() {
			return fmt.Sprintf("%s is a %s address", e.ip, e.reason)
		}
		return fmt.Sprintf("%s is %s", e.host, e.reason)
	}
	return fmt.Sprintf("%s resolves to %s, a %s address", e.host, e.ip, e.reason)
}

var (
	cgnat          = netip.MustParsePrefix("100.64.0.0/10")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	blockedV4Other = []struct {
		p      netip.Prefix
		reason string
	}{
		{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\""},
		{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol assignments)"},
		{netip.MustParsePrefix("192.0.2.0/24"), "reserved (documentation)"},
		{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
		{netip.MustParsePrefix("198.51.100.0/24"), "reserved (documentation)"},
		{netip.MustParsePrefix("203.0.113.0/24"), "reserved (documentation)"},
		{netip.MustParsePrefix("240.0.0.0/4"), "reserved (class E / broadcast)"},
	}
	blockedV6Other = []struct {
		p      netip.Prefix
		reason string
	}{
		{netip.MustParsePrefix("::/96"), "reserved (IPv4-compatible)"},
		{netip.MustParsePrefix("64:ff9b:1::/48"), "private (local-use NAT64)"},
		{netip.MustParsePrefix("100::/64"), "reserved (discard)"},
		{netip.MustParsePrefix("2001::/32"), "reserved (Teredo tunnel)"},
		{netip.MustParsePrefix("2001:db8::/32"), "reserved (documentation)"},
		{netip.MustParsePrefix("fec0::/10"), "private (site-local)"},
	}
)

// ipRefusal says why http_fetch must not connect to ip, or "" when ip is a public unicast
// address. IPv4-mapped (::ffff:a.b.c.d), NAT64 and 6to4 addresses are judged by the IPv4
// address they carry.
func ipRefusal(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return "invalid"
	}
	if ip.Is6() {
		switch {
		case nat64.Contains(ip):
			b := ip.As16()
			return ipRefusal(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			b := ip.As16()
			return ipRefusal(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local (incl. cloud metadata)"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case cgnat.Contains(ip):
		return "carrier-grade NAT (shared)"
	}
	others := blockedV6Other
	if ip.Is4() {
		others = blockedV4Other
	}
	for _, o := range others {
		if o.p.Contains(ip) {
			return o.reason
		}
	}
	return ""
}

// guard dials only addresses ipRefusal accepts (unless allowPrivate). It resolves names itself
// so every candidate address is checked, then connects to the checked IP literal; the default
// dialer's Control hook checks the address actually connected to once more.
type guard struct {
	allowPrivate bool
	resolver     Resolver
	// dial connects to an already checked "ip:port". Tests replace it to reach httptest
	// servers behind "public" addresses.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newGuard(allowPrivate bool, r Resolver) *guard {
	if r == nil {
		r = net.DefaultResolver
	}
	g := &guard{allowPrivate: allowPrivate, resolver: r}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = controlRefusePrivate
	}
	g.dial = d.DialContext
	return g
}

// controlRefusePrivate is a net.Dialer Control hook: it runs with the address the socket is
// about to connect to, after any resolution, and refuses private destinations.
func controlRefusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("http_fetch: dial %s: %w", address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("http_fetch: dial %s: not an IP address", address)
	}
	if why := ipRefusal(ip); why != "" {
		return &refusedError{host: ip.String(), ip: ip, reason: why}
	}
	return nil
}

// DialContext is the http.Transport dial function. It fails with a *refusedError when every
// address of the host is refused.
func (g *guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("http_fetch: dial %s: %w", addr, err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		if !g.allowPrivate && isLocalName(host) {
			return nil, &refusedError{host: host, reason: "a local host name"}
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
			return nil, fmt.Errorf("http_fetch: %s has no IP address", host)
		}
	}
	var refused *refusedError
	var errs []error
	for _, ip := range ips {
		if (network == "tcp4" && !ip.Unmap().Is4()) || (network == "tcp6" && ip.Is4()) {
			continue
		}
		if !g.allowPrivate {
			if why := ipRefusal(ip); why != "" {
				if refused == nil {
					refused = &refusedError{host: host, ip: ip, reason: why}
				}
				continue
			}
		}
		conn, err := g.dial(ctx, network, net.JoinHostPort(ip.String(), port))
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
	return nil, fmt.Errorf("http_fetch: %s has no %s address", host, network)
}

// isLocalName reports names that always mean this machine or its local network.
func isLocalName(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain"
}
