// Package netguard keeps the gateway's outbound HTTP away from the private network: it classifies
// IP addresses (loopback, private, link-local incl. cloud metadata, CGNAT, reserved ranges, and
// IPv4 addresses carried in IPv6), dials only public addresses (checking every resolved address
// and, through the dialer's Control hook, the one actually connected to), and downloads files
// from a fixed family of hosts with size limits, a content-type allow-list and checked redirects.
//
// http_fetch (tools/builtin) and the chat adapters' attachment downloads (channels/slack,
// channels/discord) share it.
package netguard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// Resolver resolves host names; *net.Resolver satisfies it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// RefusedError reports a destination the guard will not connect to.
type RefusedError struct {
	Host   string
	IP     netip.Addr // invalid when the host name itself was refused
	Reason string
}

func (e *RefusedError) Error() string {
	if !e.IP.IsValid() || e.Host == e.IP.String() {
		if e.IP.IsValid() {
			return fmt.Sprintf("%s is a %s address", e.IP, e.Reason)
		}
		return fmt.Sprintf("%s is %s", e.Host, e.Reason)
	}
	return fmt.Sprintf("%s resolves to %s, a %s address", e.Host, e.IP, e.Reason)
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

// Refusal says why a client must not connect to ip, or "" when ip is a public unicast
// address. IPv4-mapped (::ffff:a.b.c.d), NAT64 and 6to4 addresses are judged by the IPv4
// address they carry.
func Refusal(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return "invalid"
	}
	if ip.Is6() {
		switch {
		case nat64.Contains(ip):
			b := ip.As16()
			return Refusal(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			b := ip.As16()
			return Refusal(netip.AddrFrom4([4]byte(b[2:6])))
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

// ControlRefusePrivate is a net.Dialer Control hook: it runs with the address the socket is
// about to connect to, after any resolution, and refuses non-public destinations with a
// *RefusedError.
func ControlRefusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("netguard: dial %s: %w", address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("netguard: dial %s: not an IP address", address)
	}
	if why := Refusal(ip); why != "" {
		return &RefusedError{Host: ip.String(), IP: ip, Reason: why}
	}
	return nil
}

// IsLocalName reports names that always mean this machine ("localhost" and its subdomains).
func IsLocalName(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain"
}
