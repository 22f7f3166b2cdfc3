package main

import (
	"strings"
	"testing"
)

// Issue 36, finding 2: the gateway's own secrets are masked wherever they appear, whatever
// their shape.
func TestGatewaySecretsAreRedacted(t *testing.T) {
	cfg, err := loadYAML(t, `
http: {auth_token: console-token-0123456789}
slack: {bot_token: xoxb-not-checked-here, signing_secret: signing-secret-abcdef012345}
discord: {token: discord-token-shaped-oddly-0001}
database: {url: "postgres://echogate:db-password-9876543210@db:5432/echogate"}
models: {providers: [{name: main, base_url: "http://127.0.0.1:1/v1", api_key: provider-key-without-a-known-shape}]}
mcp: {servers: [{name: docs, url: "https://mcp.example.com/mcp", headers: {Authorization: "Bearer mcp-header-secret-42"}}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	environ := []string{"AWS_SECRET_ACCESS_KEY=aws-secret-from-env-123", "HOME=/home/echogate-user-dir", "SHORT_TOKEN=abc"}
	red := newRedactor(cfg, environ)
	for _, secret := range []string{"console-token-0123456789", "signing-secret-abcdef012345", "discord-token-shaped-oddly-0001",
		"db-password-9876543210", "provider-key-without-a-known-shape", "mcp-header-secret-42", "aws-secret-from-env-123"} {
		if got := red.Redact("value: " + secret + "\n"); strings.Contains(got, secret) {
			t.Errorf("Redact(%q) = %q, want it masked", secret, got)
		}
	}
	for _, plain := range []string{"/home/echogate-user-dir", "abc"} {
		if got := red.Redact(plain); got != plain {
			t.Errorf("Redact(%q) = %q, want it unchanged (not a secret)", plain, got)
		}
	}
}
