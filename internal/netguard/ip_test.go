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
