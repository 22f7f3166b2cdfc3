package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/echogate/echogate/channels"
)

// NewChecker returns the connection check of cfg's tokens (echogate doctor): auth.test with the
// bot token and its granted scopes, and, with an app token, whether a Socket Mode connection
// can be opened. It uses cfg.BotToken, AppToken and APIURL; client sends the calls (nil:
// http.DefaultClient). needScope says whether a scope of RequiredScopes is asked for (nil: all
// of them), so a feature's scope is asked for only where the configuration uses the feature.
// It does no I/O until Check.
func NewChecker(cfg Config, client *http.Client, needScope func(scope string) bool) channels.Checker {
	if client == nil {
		client = http.DefaultClient
	}
	if needScope == nil {
		needScope = func(string) bool { return true }
	}
	return checker{cfg: cfg, client: client, needScope: needScope}
}

type checker struct {
	cfg       Config
	client    *http.Client
	needScope func(string) bool
}

// Check implements channels.Checker.
func (k checker) Check(ctx context.Context) []channels.Finding {
	if k.cfg.BotToken == "" {
		return []channels.Finding{{Name: "slack", Skipped: true, Detail: "not configured (SLACK_BOT_TOKEN unset)"}}
	}
	api := channels.APIBase(k.cfg.APIURL, "https://slack.com/api/")
	c, hdr := k.botToken(ctx, api)
	out := []channels.Finding{c}
	if c.OK {
		out = append(out, scopesFinding(hdr, k.needScope))
	}
	if k.cfg.AppToken != "" {
		out = append(out, k.socketMode(ctx, api))
	}
	return out
}

func (k checker) botToken(ctx context.Context, api string) (channels.Finding, http.Header) {
	c := channels.Finding{Name: "slack:bot_token"}
	var auth struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Team   string `json:"team"`
		User   string `json:"user"`
		UserID string `json:"user_id"`
	}
	hdr, err := k.call(ctx, api+"auth.test", k.cfg.BotToken, &auth)
	if d, f, limited := channels.RateLimitAdvice("Slack", "auth.test", err); limited {
		c.Detail, c.Fix = d, f
		return c, hdr
	}
	switch {
	case err != nil:
		c.Detail, c.Fix = "auth.test: "+err.Error(), "check SLACK_API_URL and the network"
	case !auth.OK:
		c.Detail, c.Fix = "auth.test: "+auth.Error, "SLACK_BOT_TOKEN is not valid: copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page"
	default:
		c.OK, c.Detail = true, fmt.Sprintf("authenticated as %s (%s) in %s", auth.User, auth.UserID, auth.Team)
	}
	return c, hdr
}

// scopesFinding compares the scopes auth.test reported (X-OAuth-Scopes) with RequiredScopes.
func scopesFinding(hdr http.Header, needScope func(string) bool) channels.Finding {
	sc := channels.Finding{Name: "slack:scopes"}
	granted := map[string]bool{}
	for _, s := range strings.Split(hdr.Get("X-OAuth-Scopes"), ",") {
		granted[strings.TrimSpace(s)] = true
	}
	var missing []string
	for _, s := range RequiredScopes() { // each named with the feature that needs it
		if !granted[s] && needScope(s) {
			missing = append(missing, s+" ("+ScopeFeature[s]+")")
		}
	}
	switch {
	case hdr.Get("X-OAuth-Scopes") == "":
		sc.Skipped, sc.Detail = true, "the API did not report scopes"
	case len(missing) > 0:
		sc.Detail = "missing bot scopes: " + strings.Join(missing, ", ")
		sc.Fix = "add them under OAuth & Permissions (or re-create the app from docs/slack-app-manifest.yaml) and reinstall the app"
	default:
		sc.OK, sc.Detail = true, "all required bot scopes granted"
	}
	return sc
}

func (k checker) socketMode(ctx context.Context, api string) channels.Finding {
	a := channels.Finding{Name: "slack:socket_mode"}
	var open struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		URL   string `json:"url"`
	}
	_, err := k.call(ctx, api+"apps.connections.open", k.cfg.AppToken, &open)
	if d, f, limited := channels.RateLimitAdvice("Slack", "apps.connections.open", err); limited {
		a.Detail, a.Fix = d, f
		return a
	}
	switch {
	case err != nil:
		a.Detail, a.Fix = "apps.connections.open: "+err.Error(), "check SLACK_API_URL and the network"
	case !open.OK:
		a.Detail = "apps.connections.open: " + open.Error
		a.Fix = "SLACK_APP_TOKEN must be an app-level token (xapp-…) with connections:write, and Socket Mode must be enabled for the app"
	default:
		a.OK, a.Detail = true, "Socket Mode connection can be opened"
	}
	return a
}

// call POSTs an empty form to the Web API method u with token and decodes the answer.
func (k checker) call(ctx context.Context, u, token string, into any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(""))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.Header, &channels.StatusError{Status: resp.StatusCode, Header: resp.Header}
	}
	return resp.Header, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(into)
}
