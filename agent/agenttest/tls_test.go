package agenttest

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
)

// With TLS the fake serves HTTPS over HTTP/2, and a client trusting CertificatePEM reaches it.
func TestFakeOpenAIOverTLSSpeaksHTTP2(t *testing.T) {
	f := NewFakeOpenAI(FakeOpenAIOptions{TLS: true, Default: &Answer{Text: "secure"}})
	defer f.Close()
	if !strings.HasPrefix(f.URL(), "https://") {
		t.Fatalf("URL = %s, want https://", f.URL())
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(f.CertificatePEM()) {
		t.Fatalf("CertificatePEM holds no certificate: %q", f.CertificatePEM())
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := c.Post(f.URL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.Proto != "HTTP/2.0" || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[DONE]") {
		t.Errorf("response %s %d %q, want HTTP/2.0 200 streaming the answer", resp.Proto, resp.StatusCode, body)
	}
	if plain := NewFakeOpenAI(FakeOpenAIOptions{}); plain.CertificatePEM() != nil {
		t.Error("a plain HTTP fake has a certificate")
		plain.Close()
	} else {
		plain.Close()
	}
}
