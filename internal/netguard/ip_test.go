package netguard

import (
	"net/netip"
	"testing"
)

func TestRefusal(t *testing.T) {
	for _, tt := range []struct {
		ip   string
		want string
	}{
		{"93.184.215.14", ""},
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"127.0.0.1", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.255.255.255", "private"},
		{"172.31.0.1", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"169.254.169.254", "link-local (incl. cloud metadata)"},
		{"fe80::1", "link-local (incl. cloud metadata)"},
		{"100.64.0.1", "carrier-grade NAT (shared)"},
		{"100.127.255.255", "carrier-grade NAT (shared)"},
		{"100.128.0.1", ""},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.251", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved (class E / broadcast)"},
		{"::127.0.0.1", "reserved (IPv4-compatible)"},
		{"2002:a9fe:a9fe::", "link-local (incl. cloud metadata)"},
		{"fd00:ec2::254", "private"},
		// The special-purpose registries, range by range (RFC 6890 and successors).
		{"0.1.2.3", "\"this network\""},
		{"192.0.0.8", "reserved (IETF protocol assignments)"},
		{"192.0.0.170", "reserved (IETF protocol assignments)"},
		{"192.0.2.1", "reserved (documentation)"},
		{"192.88.99.1", "reserved (deprecated 6to4 relay anycast)"},
		{"198.19.255.255", "reserved (benchmarking)"},
		{"198.20.0.1", ""},
		{"198.51.100.7", "reserved (documentation)"},
		{"203.0.113.9", "reserved (documentation)"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved (class E / broadcast)"},
		{"192.31.196.1", ""}, // AS112, globally reachable
		{"::ffff:0:127.0.0.1", "reserved (IPv4-translated)"},
		{"::ffff:0:8.8.8.8", "reserved (IPv4-translated)"},
		{"::ffff:169.254.169.254", "link-local (incl. cloud metadata)"},
		{"::8.8.8.8", "reserved (IPv4-compatible)"},
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b::a00:1", "private"},
		{"64:ff9b:1::808:808", "private (local-use NAT64)"},
		{"100::1", "reserved (discard)"},
		{"100:0:0:1::1", "reserved (dummy prefix)"},
		{"2001::1", "reserved (Teredo tunnel)"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved (Teredo tunnel)"},
		{"2001:2::1", "reserved (benchmarking)"},
		{"2001:10::1", "reserved (ORCHID)"},
		{"2001:20::1", "reserved (ORCHIDv2)"},
		{"2001:30::1", "reserved (drone remote ID)"},
		{"2001:1::1", "reserved (IETF protocol assignments)"},
		{"2001:db8::1", "reserved (documentation)"},
		{"2001:200::1", ""}, // first allocation past 2001::/23
		{"2002:808:808::", ""},
		{"2002:c0a8:101::", "private"},
		{"3fff::1", "reserved (documentation)"},
		{"3fff:1000::1", ""},
		{"5f00::1", "reserved (segment routing SIDs)"},
		{"fec0::1", "private (site-local)"},
		{"fe80::1%eth0", "link-local (incl. cloud metadata)"},
		{"ff05::2", "multicast"},
		{"4000::1", "reserved (not global unicast)"},
		{"::2", "reserved (IPv4-compatible)"},
		{"1::", "reserved (not global unicast)"},
	} {
		if got := Refusal(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("Refusal(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

func TestControlRefusePrivate(t *testing.T) {
	for addr, wantErr := range map[string]bool{
		"127.0.0.1:80":          true,
		"[::ffff:10.0.0.1]:443": true,
		"[fe80::1%eth0]:80":     true,
		"93.184.215.14:443":     false,
		"not-an-ip:80":          true,
	} {
		if err := ControlRefusePrivate("tcp", addr, nil); (err != nil) != wantErr {
			t.Errorf("ControlRefusePrivate(%s) = %v, want error %v", addr, err, wantErr)
		}
	}
}
