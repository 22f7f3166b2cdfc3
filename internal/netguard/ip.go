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

// special is one entry of the special-purpose address registries (IANA's IPv4 and IPv6
// Special-Purpose Address Registries: RFC 6890 and its successors) that a client must not reach:
// every range not globally reachable, plus deprecated anycast ranges. embedded, when set, says
// where the IPv4 address a translation range carries starts; that address is judged instead.
type special struct {
	p        netip.Prefix
	reason   string
	embedded int
}

func sp(prefix, reason string) special {
	return special{p: netip.MustParsePrefix(prefix), reason: reason}
}

// specialV4 lists the IPv4 ranges, most specific first where they nest.
var specialV4 = []special{
	sp("0.0.0.0/32", "unspecified"),
	sp("0.0.0.0/8", "\"this network\""),                              // RFC 791, 1122
	sp("10.0.0.0/8", "private"),                                      // RFC 1918
	sp("100.64.0.0/10", "carrier-grade NAT (shared)"),                // RFC 6598
	sp("127.0.0.0/8", "loopback"),                                    // RFC 1122
	sp("169.254.0.0/16", "link-local (incl. cloud metadata)"),        // RFC 3927
	sp("172.16.0.0/12", "private"),                                   // RFC 1918
	sp("192.0.0.0/24", "reserved (IETF protocol assignments)"),       // RFC 6890: DS-Lite, PCP, TURN, NAT64 discovery
	sp("192.0.2.0/24", "reserved (documentation)"),                   // RFC 5737 TEST-NET-1
	sp("192.88.99.0/24", "reserved (deprecated 6to4 relay anycast)"), // RFC 7526
	sp("192.168.0.0/16", "private"),                                  // RFC 1918
	sp("198.18.0.0/15", "reserved (benchmarking)"),                   // RFC 2544
	sp("198.51.100.0/24", "reserved (documentation)"),                // RFC 5737 TEST-NET-2
	sp("203.0.113.0/24", "reserved (documentation)"),                 // RFC 5737 TEST-NET-3
	sp("224.0.0.0/4", "multicast"),                                   // RFC 5771
	sp("255.255.255.255/32", "reserved (class E / broadcast)"),       // RFC 919
	sp("240.0.0.0/4", "reserved (class E / broadcast)"),              // RFC 1112
}

// specialV6 lists the IPv6 ranges, most specific first where they nest. Anything outside
// 2000::/3 that none of them names is refused too: it is not global unicast.
var specialV6 = []special{
	sp("::/128", "unspecified"),                               // RFC 4291
	sp("::1/128", "loopback"),                                 // RFC 4291
	{p: netip.MustParsePrefix("::ffff:0:0/96"), embedded: 12}, // IPv4-mapped, RFC 4291
	sp("::ffff:0:0:0/96", "reserved (IPv4-translated)"),       // RFC 2765 SIIT
	sp("::/96", "reserved (IPv4-compatible)"),                 // RFC 4291, deprecated
	{p: netip.MustParsePrefix("64:ff9b::/96"), embedded: 12},  // NAT64 well-known, RFC 6052
	sp("64:ff9b:1::/48", "private (local-use NAT64)"),         // RFC 8215
	sp("100::/64", "reserved (discard)"),                      // RFC 6666
	sp("100:0:0:1::/64", "reserved (dummy prefix)"),           // RFC 9780
	sp("2001::/32", "reserved (Teredo tunnel)"),               // RFC 4380
	sp("2001:2::/48", "reserved (benchmarking)"),              // RFC 5180
	sp("2001:10::/28", "reserved (ORCHID)"),                   // RFC 4843, deprecated
	sp("2001:20::/28", "reserved (ORCHIDv2)"),                 // RFC 7343
	sp("2001:30::/28", "reserved (drone remote ID)"),          // RFC 9374
	sp("2001::/23", "reserved (IETF protocol assignments)"),   // RFC 2928
	sp("2001:db8::/32", "reserved (documentation)"),           // RFC 3849
	{p: netip.MustParsePrefix("2002::/16"), embedded: 2},      // 6to4, RFC 3056
	sp("3fff::/20", "reserved (documentation)"),               // RFC 9637
	sp("5f00::/16", "reserved (segment routing SIDs)"),        // RFC 9602
	sp("fc00::/7", "private"),                                 // RFC 4193 unique local
	sp("fe80::/10", "link-local (incl. cloud metadata)"),      // RFC 4291
	sp("fec0::/10", "private (site-local)"),                   // RFC 3879, deprecated
	sp("ff00::/8", "multicast"),                               // RFC 4291
}

var globalUnicast = netip.MustParsePrefix("2000::/3")

// Refusal says why a client must not connect to ip, or "" when ip is a public unicast
// address. IPv4-mapped (::ffff:a.b.c.d), NAT64 and 6to4 addresses are judged by the IPv4
// address they carry; every other special-purpose range is refused with its name.
func Refusal(ip netip.Addr) string {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return "invalid"
	}
	list := specialV6
	if ip.Is4() {
		list = specialV4
	}
	for _, s := range list {
		if !s.p.Contains(ip) {
			continue
		}
		if s.embedded > 0 {
			b := ip.As16()
			return Refusal(netip.AddrFrom4([4]byte(b[s.embedded : s.embedded+4])))
		}
		return s.reason
	}
	if ip.Is6() && !globalUnicast.Contains(ip) {
		return "reserved (not global unicast)"
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
