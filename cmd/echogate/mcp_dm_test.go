package main

import (
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var dmLinkRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+/authorize\?[^\s>|]+`)

// TestMCPLoginLinkByDM: `echogate mcp login --dm slack:U0BOSS tracker` has the running gateway
// send the authorization URL to that approver by Slack DM (and not print it); the link logs the
// gateway in through its callback. A person who is not an approver, or a platform the gateway
// does not run, is refused with what to fix, and nothing is sent.
func TestMCPLoginLinkByDM(t *testing.T) {
	o := newProtectedMCP(t)
	p, srv := newSlackPlatform(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "c.yaml")
	body := "approval: {approvers: [slack:U0BOSS]}\nmcp:\n  servers: [{name: tracker, url: '" + o.URL + "/mcp', auth: oauth, safety: safe}]\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey}
	for k, v := range p.vars {
		vars[k] = v
	}
	base, logs, stop := startServe(t, vars, "--config", cfgPath)
	defer stop()
	waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return strings.HasPrefix(s, "needs login") })
	waitReadyz(t, base, http.StatusOK, "slack", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })

	for _, tc := range []struct{ dm, want string }{
		{"slack:U0NOBODY", "approval.approvers"},
		{"discord:123", "discord is not configured"},
		{"U0BOSS", "slack:USERID"},
	} {
		code, out, errs := runCLI(t, vars, nil, nil, "--config", cfgPath, "mcp", "login", "--dm", tc.dm, "tracker")
		if code == 0 || !strings.Contains(errs, tc.want) || dmLinkRe.MatchString(out+errs) {
			t.Errorf("mcp login --dm %s = %d %q %q, want refused naming %q and no link", tc.dm, code, out, errs, tc.want)
		}
	}
	if msgs := srv.BotMessages("U0NOBODY"); len(msgs) > 0 {
		t.Errorf("a link went to a person who is not an approver: %q", msgs[0].Text)
	}

	code, out, errs := runCLI(t, vars, nil, nil, "--config", cfgPath, "mcp", "login", "--dm", "slack:U0BOSS", "tracker")
	if code != 0 || !strings.Contains(out, "Sent the authorization URL to slack:U0BOSS") || dmLinkRe.MatchString(out) {
		t.Fatalf("mcp login --dm slack:U0BOSS = %d %q %q, want sent, and the URL not printed", code, out, errs)
	}
	var link string
	for _, m := range srv.BotMessages("U0BOSS") {
		link = html.UnescapeString(dmLinkRe.FindString(m.Text))
	}
	if link == "" {
		t.Fatalf("no authorization link in the DM to U0BOSS; messages: %+v", srv.BotMessages("U0BOSS"))
	}
	if code, page := getPage(t, authRedirect(t, link)); code != http.StatusOK {
		t.Fatalf("callback of the DM'd link = %d %q; log:\n%s", code, page, logs.String())
	}
	waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return s == "ok (1 tools)" })
}
