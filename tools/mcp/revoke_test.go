package mcp

import (
	"strings"
	"testing"
)

func TestIssuerCandidates(t *testing.T) {
	for _, tc := range []struct {
		g    Grant
		want string
	}{
		{Grant{Issuer: "https://as.example/tenant", TokenURL: "https://as.example/x/token"}, "https://as.example/tenant"},
		{Grant{TokenURL: "https://as.example/token"}, "https://as.example"},
		{Grant{TokenURL: "https://as.example/oauth/v2/token?x=1"}, "https://as.example/oauth/v2,https://as.example/oauth,https://as.example"},
		{Grant{TokenURL: "https://as.example/a/b/c/d/e/token"}, "https://as.example/a/b/c/d/e,https://as.example/a/b/c/d,https://as.example/a/b/c,https://as.example/a/b"},
		{Grant{TokenURL: "not a url"}, ""},
	} {
		if got := strings.Join(issuerCandidates(&tc.g), ","); got != tc.want {
			t.Errorf("issuerCandidates(%+v) = %q, want %q", tc.g, got, tc.want)
		}
	}
}
