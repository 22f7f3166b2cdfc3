package redact

import (
	"strings"
	"testing"
)

// Fake secrets of every shape; none is real.
var knownTokens = map[string]string{
	"slack bot":       "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	"slack user":      "xoxp-1234567890-1234567890-1234567890123-0123456789abcdef0123456789abcdef",
	"slack app":       "xapp-1-A0123456789-1234567890123-0123456789abcdef0123456789abcdef",
	"slack refresh":   "xoxe-1-My0xLTEyMzQ1Njc4OTAtMTIzNDU2Nzg5MDEyMw",
	"slack rotating":  "xoxe.xoxb-1-AbCdEfGhIjKlMnOpQrStUvWx0123456789",
	"openai":          "sk-AbCdEfGhIjKlMnOpQrStT3BlbkFJuVwXyZ0123456789ab",
	"openai project":  "sk-proj-AbCdEfGhIjKlMnOpQrSt_uVwXyZ-0123456789abcdefGHIJ",
	"discord":         "MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz0123456",
	"aws":             "AKIAIOSFODNN7EXAMPLE",
	"github classic":  "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
	"github fine":     "github_pat_11ABCDEFG0123456789_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijklmnopq",
	"jwt":             "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"configured":      "hunter2-the-operators-own-secret",
	"configured wild": "p@ss w0rd! with spaces",
}

var testSecrets = []string{knownTokens["configured"], knownTokens["configured wild"]}

const pemKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDtest\n-----END OPENSSH PRIVATE KEY-----"

func TestRedactKnownShapes(t *testing.T) {
	r := New(testSecrets)
	for name, tok := range knownTokens {
		in := "here: " + tok + " — done"
		got := r.Redact(in)
		if strings.Contains(got, tok) || !strings.Contains(got, Mask) {
			t.Errorf("%s: Redact(%q) = %q, want the token replaced by %s", name, in, got, Mask)
		}
		if !strings.HasPrefix(got, "here: ") || !strings.HasSuffix(got, " — done") {
			t.Errorf("%s: Redact(%q) = %q, want the text around the token kept", name, in, got)
		}
	}
	for name, tt := range map[string]struct{ in, want string }{
		"bearer":         {"curl -H 'Authorization: Bearer abcdefghijklmnop0123456789' x", "curl -H 'Authorization: Bearer [redacted]' x"},
		"pem block":      {"key:\n" + pemKey + "\nthat's it", "key:\n[redacted]\nthat's it"},
		"pem unfinished": {"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA", "key:\n[redacted]"},
		"plain prose":    {"Ask the desk about the sk-rules and a Bearer of news.", "Ask the desk about the sk-rules and a Bearer of news."},
		"public cert":    {"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
		"empty":          {"", ""},
	} {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", name, tt.in, got, tt.want)
		}
	}
}

func TestNilRedactorStillCatchesShapes(t *testing.T) {
	var r *Redactor
	tok := knownTokens["slack bot"]
	if got := r.Redact("t=" + tok); strings.Contains(got, tok) {
		t.Fatalf("(*Redactor)(nil).Redact = %q, want the Slack token masked", got)
	}
}

func TestShortConfiguredSecretsAreIgnored(t *testing.T) {
	r := New([]string{"", "true", "abc"})
	if got := r.Redact("true abc"); got != "true abc" {
		t.Fatalf("Redact with short secrets = %q, want the text unchanged (values under %d bytes are not secrets worth masking)", got, minSecretLen)
	}
}

// Every token, split at every byte into two deltas, never reaches the output whole, and what
// the stream emits is what Redact makes of the whole text.
func TestStreamCatchesATokenSplitAcrossDeltas(t *testing.T) {
	r := New(testSecrets)
	for name, tok := range knownTokens {
		text := "The value is " + tok + ". Keep it safe."
		want := r.Redact(text)
		for cut := 0; cut <= len(text); cut++ {
			s := r.Stream()
			got := s.Write(text[:cut]) + s.Write(text[cut:]) + s.Flush()
			if got != want {
				t.Errorf("%s: stream split at %d = %q, want %q", name, cut, got, want)
				break
			}
		}
	}
	text := "key:\n" + pemKey + "\ndone"
	s := r.Stream()
	var got strings.Builder
	for _, ch := range strings.SplitAfter(text, "\n") {
		got.WriteString(s.Write(ch))
	}
	got.WriteString(s.Flush())
	if got.String() != "key:\n[redacted]\ndone" {
		t.Errorf("stream of a PEM block line by line = %q, want it masked", got.String())
	}
}

func TestStreamEmitsPlainTextAtOnce(t *testing.T) {
	s := New(nil).Stream()
	if got := s.Write("Hello there, "); got != "Hello there, " {
		t.Errorf("Write(%q) = %q, want it all (no secret can start in it)", "Hello there, ", got)
	}
	if got := s.Write("world"); got != "" {
		t.Errorf("Write(%q) = %q, want it held (a word may grow into a token)", "world", got)
	}
	if got := s.Flush(); got != "world" {
		t.Errorf("Flush = %q, want %q", got, "world")
	}
}

func TestKebabCaseWordsAreNotKeys(t *testing.T) {
	r := New(nil)
	for _, in := range []string{
		"See disk-usage-monitoring-service-overview for details.",
		"the risk-assessment-framework-version-two doc",
		"module.submodule_name.another_really_long_name_here",
	} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, got)
		}
	}
}
