package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var authURLRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+/authorize\?\S+`)

// mcpCLIConfig writes a configuration with one auth: oauth server in front of o.
func mcpCLIConfig(t *testing.T, o *protectedMCP) (path, dir string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "c.yaml")
	body := "mcp:\n  servers: [{name: tracker, url: '" + o.URL + "/mcp', auth: oauth, safety: safe}]\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

// runCLI runs echogate with vars and args; onURL (may be nil) is called in its own goroutine
// with the authorization URL once the command prints it.
func runCLI(t *testing.T, vars map[string]string, stdin io.Reader, onURL func(string), args ...string) (int, string, string) {
	t.Helper()
	e, out, errb := testEnv(vars, args...)
	if stdin != nil {
		e.stdin = stdin
	}
	if onURL != nil {
		e.stdout = &onLine{syncBuffer: out, marker: "/authorize?", fn: func() {
			go onURL(authURLRe.FindString(out.String()))
		}}
	}
	code := run(context.Background(), e)
	return code, out.String(), errb.String()
}

// TestMCPLoginCLI: `echogate mcp login NAME` begins the login on a running gateway (whose
// /oauth/callback receives the redirect), or without one on a loopback listener, or with
// --paste from the URL pasted on stdin; `echogate mcp status` then shows the server connected.
func TestMCPLoginCLI(t *testing.T) {
	t.Run("running gateway", func(t *testing.T) {
		o := newProtectedMCP(t)
		p, dir := mcpCLIConfig(t, o)
		vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey}
		base, _, stop := startServe(t, vars, "--config", p)
		defer stop()
		waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return strings.HasPrefix(s, "needs login") })
		if code, out, _ := runCLI(t, vars, nil, nil, "--config", p, "mcp", "status"); code != 0 || !strings.Contains(out, "tracker\tneeds login") {
			t.Errorf("mcp status before login = %d %q, want tracker needs login", code, out)
		}
		code, out, errs := runCLI(t, vars, nil, nil, "--config", p, "mcp", "login", "tracker")
		u := authURLRe.FindString(out)
		if code != 0 || u == "" {
			t.Fatalf("mcp login = %d %q %q, want 0 and the authorization URL", code, out, errs)
		}
		back := authRedirect(t, u)
		if !strings.HasPrefix(back, base+"/oauth/callback?") {
			t.Fatalf("redirect to %q, want the running gateway's %s/oauth/callback", back, base)
		}
		if code, page := getPage(t, back); code != http.StatusOK {
			t.Fatalf("GET callback = %d %q, want 200", code, page)
		}
		waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return s == "ok (1 tools)" })
		if code, out, _ := runCLI(t, vars, nil, nil, "--config", p, "mcp", "status"); code != 0 || !strings.Contains(out, "tracker\tok (1 tools)") {
			t.Errorf("mcp status after login = %d %q, want tracker ok (1 tools)", code, out)
		}
	})
	t.Run("loopback", func(t *testing.T) {
		o := newProtectedMCP(t)
		p, dir := mcpCLIConfig(t, o)
		vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey, "ECHOGATE_HTTP_ADDR": "127.0.0.1:1"}
		browser := func(u string) { // the browser on this machine follows the redirect to the listener
			if resp, err := http.Get(u); err == nil {
				resp.Body.Close()
			}
		}
		code, out, errs := runCLI(t, vars, nil, browser, "--config", p, "mcp", "login", "tracker")
		if code != 0 || !strings.Contains(out, "Logged in to MCP server tracker") {
			t.Fatalf("mcp login (loopback) = %d %q %q, want 0 logged in", code, out, errs)
		}
		if code, out, _ := runCLI(t, vars, nil, nil, "--config", p, "mcp", "status"); code != 0 || !strings.Contains(out, "1 tools (tracker__whoami)") {
			t.Errorf("mcp status with the stored grant = %d %q, want tracker's tool listed", code, out)
		}
	})
	t.Run("paste", func(t *testing.T) {
		o := newProtectedMCP(t)
		p, dir := mcpCLIConfig(t, o)
		vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey, "ECHOGATE_HTTP_ADDR": "127.0.0.1:1"}
		pr, pw := io.Pipe()
		defer pw.Close()
		paste := func(u string) { // the browser elsewhere: the redirect does not load; its URL is pasted
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			loc := ""
			if resp, err := c.Get(u); err == nil { // a failure pastes nothing: the login then fails
				resp.Body.Close()
				loc = resp.Header.Get("Location")
			}
			_, _ = io.WriteString(pw, loc+"\n")
		}
		code, out, errs := runCLI(t, vars, pr, paste, "--config", p, "mcp", "login", "--paste", "tracker")
		if code != 0 || !strings.Contains(out, "Logged in to MCP server tracker") {
			t.Fatalf("mcp login --paste = %d %q %q, want 0 logged in", code, out, errs)
		}
	})
}

// TestDoctorSaysMCPNeedsLogin: doctor reports a server with auth: oauth and no grant as needing
// login, with the command that makes one.
func TestDoctorSaysMCPNeedsLogin(t *testing.T) {
	o := newProtectedMCP(t)
	p, dir := mcpCLIConfig(t, o)
	vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey}
	code, out, errs := runCLI(t, vars, nil, nil, "--config", p, "doctor")
	if code != 1 {
		t.Fatalf("doctor exit %d, want 1:\n%s%s", code, out, errs)
	}
	for _, want := range []string{"!!  mcp:tracker", "needs login", "run `echogate mcp login tracker` (with the gateway running"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// TestMCPLogoutCLI: `echogate mcp logout NAME` revokes the server's grant at the authorization
// server (RFC 7009) and forgets it: through the running gateway (the server needs login there
// at once), and beside a stopped one on the store.
func TestMCPLogoutCLI(t *testing.T) {
	t.Run("running gateway", func(t *testing.T) {
		o := newProtectedMCP(t)
		p, dir := mcpCLIConfig(t, o)
		vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey}
		base, _, stop := startServe(t, vars, "--config", p)
		defer stop()
		code, out, _ := runCLI(t, vars, nil, nil, "--config", p, "mcp", "login", "tracker")
		if code != 0 {
			t.Fatalf("mcp login = %d %q", code, out)
		}
		if code, page := getPage(t, authRedirect(t, authURLRe.FindString(out))); code != http.StatusOK {
			t.Fatalf("callback = %d %q", code, page)
		}
		waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return s == "ok (1 tools)" })
		issued := o.tokens()
		code, out, errs := runCLI(t, vars, nil, nil, "--config", p, "mcp", "logout", "tracker")
		if code != 0 || !strings.Contains(out, "Logged out of MCP server tracker") {
			t.Fatalf("mcp logout = %d %q %q, want logged out", code, out, errs)
		}
		if got := strings.Join(o.revokedTokens(), ","); !strings.Contains(got, "rt-") || !strings.Contains(got, issued[0]) {
			t.Errorf("tokens revoked at the authorization server = %q, want the refresh token and %s", got, issued[0])
		}
		waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return strings.HasPrefix(s, "needs login") })
		if code, _, errs := runCLI(t, vars, nil, nil, "--config", p, "mcp", "logout", "tracker"); code == 0 || !strings.Contains(errs, "no stored grant") {
			t.Errorf("mcp logout twice = %d %q, want refused: no stored grant", code, errs)
		}
	})
	t.Run("stopped gateway", func(t *testing.T) {
		o := newProtectedMCP(t)
		p, dir := mcpCLIConfig(t, o)
		vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey, "ECHOGATE_HTTP_ADDR": "127.0.0.1:1"}
		browser := func(u string) {
			if resp, err := http.Get(u); err == nil {
				resp.Body.Close()
			}
		}
		if code, out, errs := runCLI(t, vars, nil, browser, "--config", p, "mcp", "login", "tracker"); code != 0 {
			t.Fatalf("mcp login (loopback) = %d %q %q", code, out, errs)
		}
		code, out, errs := runCLI(t, vars, nil, nil, "--config", p, "mcp", "logout", "tracker")
		if code != 0 || !strings.Contains(out, "revoked at the authorization server and forgotten") {
			t.Fatalf("mcp logout (stopped gateway) = %d %q %q, want revoked and forgotten", code, out, errs)
		}
		if len(o.revokedTokens()) != 2 {
			t.Errorf("tokens revoked = %v, want the refresh and the access token", o.revokedTokens())
		}
		if code, out, _ := runCLI(t, vars, nil, nil, "--config", p, "mcp", "status"); !strings.Contains(out, "needs login") {
			t.Errorf("mcp status after logout = %d %q, want needs login", code, out)
		}
	})
}
