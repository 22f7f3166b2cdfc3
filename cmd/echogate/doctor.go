package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/echogate/echogate/channels/slack"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// check is one doctor finding.
type check struct {
	name    string
	ok      bool
	skipped bool
	detail  string
	fix     string
}

// cmdDoctor checks configuration, storage, the model endpoint and the platform tokens, prints each
// problem with its fix, and exits non-zero when there is one.
func cmdDoctor(ctx context.Context, e env, cfg *Config, log *slog.Logger) int {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	checks := []check{{name: "config", ok: true, detail: "loaded and valid"}, doctorConfigFile(cfg.source.path)}
	checks = append(checks, doctorAgents(cfg)...) // doctor_agents.go
	checks = append(checks, doctorApprovers(cfg)...)
	checks = append(checks, doctorStore(ctx, cfg, log))
	checks = append(checks, doctorModel(ctx, client, cfg)...)
	checks = append(checks, doctorSlack(ctx, client, cfg)...)
	checks = append(checks, doctorDiscord(ctx, client, cfg)...)
	checks = append(checks, doctorMCP(ctx, cfg)...)
	checks = append(checks, doctorSkills(cfg)...)    // skills_wiring.go
	checks = append(checks, doctorSchedules(cfg)...) // schedule_doctor.go
	problems := 0
	for _, c := range checks {
		switch {
		case c.skipped:
			fmt.Fprintf(e.stdout, "  -   %-18s %s\n", c.name, c.detail)
		case c.ok:
			fmt.Fprintf(e.stdout, "  ok  %-18s %s\n", c.name, c.detail)
		default:
			problems++
			fmt.Fprintf(e.stdout, "  !!  %-18s %s\n      fix: %s\n", c.name, c.detail, c.fix)
		}
	}
	if problems > 0 {
		fmt.Fprintf(e.stdout, "\n%d problem(s) found\n", problems)
		return 1
	}
	fmt.Fprintln(e.stdout, "\nall checks passed")
	return 0
}

func doctorStore(ctx context.Context, cfg *Config, log *slog.Logger) check {
	c := check{name: "database"}
	s, backend, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		c.detail = err.Error()
		if cfg.Database.URL != "" {
			c.fix = "check DATABASE_URL (host, port, user, password, database) and that PostgreSQL is running and reachable"
		} else {
			c.fix = "make ECHOGATE_DATA_DIR a writable directory"
		}
		return c
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		c.detail, c.fix = backend+": "+err.Error(), "check that the database is reachable"
		return c
	}
	if err := s.Migrate(ctx); err != nil {
		c.detail = backend + ": migrations: " + err.Error()
		c.fix = "run `echogate migrate` and read its error; with PostgreSQL the pgvector extension must be installed (CREATE EXTENSION vector needs it on the server)"
		return c
	}
	c.ok, c.detail = true, backend+" reachable, migrations applied"
	return c
}

func doctorModel(ctx context.Context, client *http.Client, cfg *Config) []check {
	if cfg.demoMode() {
		return []check{{name: "model", skipped: true, detail: "no OPENAI_API_KEY / OPENAI_BASE_URL: the offline demo model answers"}}
	}
	var out []check
	for i, p := range cfg.Models.Providers {
		c := check{name: "model:" + p.Name}
		base := strings.TrimRight(p.BaseURL, "/")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
		if p.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+p.APIKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			c.detail = fmt.Sprintf("%s unreachable: %v", base, err)
			c.fix = fmt.Sprintf("check models.providers[%d].base_url (OPENAI_BASE_URL, including /v1) and the network", i)
			out = append(out, c)
			continue
		}
		var body struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			c.detail, c.fix = rateLimitAdvice(base, "GET /models", &httpStatusError{status: resp.StatusCode, header: resp.Header})
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			c.detail = fmt.Sprintf("%s rejected the API key (HTTP %d)", base, resp.StatusCode)
			c.fix = "set a valid OPENAI_API_KEY (models.providers[].api_key)"
		case resp.StatusCode >= 300:
			c.detail = fmt.Sprintf("%s/models answered HTTP %d", base, resp.StatusCode)
			c.fix = "check that the base URL points at an OpenAI-compatible API including /v1"
		default:
			c.ok = true
			c.detail = fmt.Sprintf("%s answers (%d models listed)", base, len(body.Data))
			if i == 0 && len(body.Data) > 0 && !hasModel(body.Data, cfg.Models.Default) {
				c.ok = false
				c.detail = fmt.Sprintf("%s does not list the default model %q", base, cfg.Models.Default)
				c.fix = "set ECHOGATE_MODEL (models.default) to a model the endpoint serves"
			} else if key, m := unservedModel(cfg, body.Data); i == 0 && len(p.Models) == 0 && key != "" {
				// The first provider lists no models: it is sent every unlisted name, and
				// only its GET /models can say which it serves (the start cannot decide).
				c.ok = false
				c.detail = fmt.Sprintf("%s does not list %q, which %s names", base, m, key)
				c.fix = fmt.Sprintf("correct %s, or list the provider's models (models.providers[].models) so the start checks them", key)
			}
		}
		out = append(out, c)
	}
	return out
}

func hasModel(list []struct {
	ID string `json:"id"`
}, name string) bool {
	for _, m := range list {
		if m.ID == name {
			return true
		}
	}
	return false
}

func doctorSlack(ctx context.Context, client *http.Client, cfg *Config) []check {
	if cfg.Slack.BotToken == "" {
		return []check{{name: "slack", skipped: true, detail: "not configured (SLACK_BOT_TOKEN unset)"}}
	}
	api := cfg.Slack.APIURL
	if api == "" {
		api = "https://slack.com/api/"
	}
	if !strings.HasSuffix(api, "/") {
		api += "/"
	}
	var out []check
	c := check{name: "slack:bot_token"}
	var auth struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Team   string `json:"team"`
		User   string `json:"user"`
		UserID string `json:"user_id"`
	}
	hdr, err := slackCall(ctx, client, api+"auth.test", cfg.Slack.BotToken, &auth)
	switch {
	case isRateLimited(err):
		c.detail, c.fix = rateLimitAdvice("Slack", "auth.test", err)
	case err != nil:
		c.detail, c.fix = "auth.test: "+err.Error(), "check SLACK_API_URL and the network"
	case !auth.OK:
		c.detail, c.fix = "auth.test: "+auth.Error, "SLACK_BOT_TOKEN is not valid: copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page"
	default:
		c.ok, c.detail = true, fmt.Sprintf("authenticated as %s (%s) in %s", auth.User, auth.UserID, auth.Team)
	}
	out = append(out, c)
	if c.ok {
		sc := check{name: "slack:scopes"}
		granted := map[string]bool{}
		for _, s := range strings.Split(hdr.Get("X-OAuth-Scopes"), ",") {
			granted[strings.TrimSpace(s)] = true
		}
		var missing []string
		for _, s := range slack.RequiredScopes() { // each named with the feature that needs it
			if !granted[s] {
				missing = append(missing, s+" ("+slack.ScopeFeature[s]+")")
			}
		}
		if hdr.Get("X-OAuth-Scopes") == "" {
			sc.skipped, sc.detail = true, "the API did not report scopes"
		} else if len(missing) > 0 {
			sc.detail = "missing bot scopes: " + strings.Join(missing, ", ")
			sc.fix = "add them under OAuth & Permissions (or re-create the app from docs/slack-app-manifest.yaml) and reinstall the app"
		} else {
			sc.ok, sc.detail = true, "all required bot scopes granted"
		}
		out = append(out, sc)
	}
	if cfg.Slack.AppToken != "" {
		a := check{name: "slack:socket_mode"}
		var open struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
			URL   string `json:"url"`
		}
		if _, err := slackCall(ctx, client, api+"apps.connections.open", cfg.Slack.AppToken, &open); isRateLimited(err) {
			a.detail, a.fix = rateLimitAdvice("Slack", "apps.connections.open", err)
		} else if err != nil {
			a.detail, a.fix = "apps.connections.open: "+err.Error(), "check SLACK_API_URL and the network"
		} else if !open.OK {
			a.detail = "apps.connections.open: " + open.Error
			a.fix = "SLACK_APP_TOKEN must be an app-level token (xapp-…) with connections:write, and Socket Mode must be enabled for the app"
		} else {
			a.ok, a.detail = true, "Socket Mode connection can be opened"
		}
		out = append(out, a)
	}
	return out
}

func slackCall(ctx context.Context, client *http.Client, u, token string, into any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(""))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.Header, &httpStatusError{status: resp.StatusCode, header: resp.Header}
	}
	return resp.Header, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(into)
}

// Discord application flags that allow the MESSAGE_CONTENT intent.
const (
	flagGatewayMessageContent        = 1 << 18
	flagGatewayMessageContentLimited = 1 << 19
)

func doctorDiscord(ctx context.Context, client *http.Client, cfg *Config) []check {
	if cfg.Discord.Token == "" {
		return []check{{name: "discord", skipped: true, detail: "not configured (DISCORD_BOT_TOKEN unset)"}}
	}
	api := cfg.Discord.APIURL
	if api == "" {
		api = "https://discord.com/api/v9/"
	}
	if !strings.HasSuffix(api, "/") {
		api += "/"
	}
	var out []check
	c := check{name: "discord:token"}
	var me struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Bot      bool   `json:"bot"`
	}
	status, err := discordGet(ctx, client, api+"users/@me", cfg.Discord.Token, &me)
	switch {
	case isRateLimited(err):
		c.detail, c.fix = rateLimitAdvice("Discord", "users/@me", err)
	case err != nil:
		c.detail, c.fix = "users/@me: "+err.Error(), "check DISCORD_API_URL and the network"
	case status == http.StatusUnauthorized:
		c.detail, c.fix = "users/@me: the token was rejected (HTTP 401)", "set DISCORD_BOT_TOKEN to the bot token from the Developer Portal (Bot → Reset Token)"
	case status != http.StatusOK:
		c.detail, c.fix = fmt.Sprintf("users/@me answered HTTP %d", status), "check DISCORD_API_URL"
	default:
		c.ok, c.detail = true, fmt.Sprintf("authenticated as %s (%s)", me.Username, me.ID)
	}
	out = append(out, c)
	if !c.ok {
		return out
	}
	ic := check{name: "discord:intents"}
	var app struct {
		Flags int64 `json:"flags"`
	}
	status, err = discordGet(ctx, client, api+"applications/@me", cfg.Discord.Token, &app)
	switch {
	case err != nil || status != http.StatusOK:
		ic.skipped, ic.detail = true, "could not read the application's flags"
	case !cfg.Discord.messageContent():
		ic.ok, ic.detail = true, "MESSAGE CONTENT intent not needed: mentions, replies and DMs carry their text (discord.message_content: auto with require_mention, or off)"
	case app.Flags&(flagGatewayMessageContent|flagGatewayMessageContentLimited) == 0:
		ic.detail = "the MESSAGE CONTENT privileged intent is not enabled, and answering without a mention (require_mention: false or message_content: on) needs it"
		ic.fix = "Developer Portal → your application → Bot → Privileged Gateway Intents → enable MESSAGE CONTENT INTENT, or set discord.message_content: off"
	default:
		ic.ok, ic.detail = true, "MESSAGE CONTENT intent enabled"
	}
	return append(out, ic)
}

func discordGet(ctx context.Context, client *http.Client, u, token string, into any) (int, error) {
	if _, err := url.Parse(u); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bot "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(into)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return resp.StatusCode, &httpStatusError{status: resp.StatusCode, header: resp.Header}
	}
	return resp.StatusCode, nil
}

// unservedModel finds a model that the agents or routes name, that no provider lists, and that
// the endpoint's model list lacks: the key naming it and the model; "" when there is none.
func unservedModel(cfg *Config, served []struct {
	ID string `json:"id"`
}) (key, model string) {
	if len(served) == 0 {
		return "", ""
	}
	listed := map[string]bool{}
	for _, p := range cfg.Models.Providers {
		for _, m := range p.Models {
			listed[m] = true
		}
	}
	routes := map[string]bool{}
	for _, r := range cfg.Models.Routes {
		routes[r.Name] = true
	}
	unserved := func(m string) bool { return m != "" && !listed[m] && !hasModel(served, m) }
	for i, r := range cfg.Models.Routes {
		if unserved(r.Model) {
			return fmt.Sprintf("models.routes[%d].model", i), r.Model
		}
		for j, f := range r.Fallback {
			if unserved(f) {
				return fmt.Sprintf("models.routes[%d].fallback[%d]", i, j), f
			}
		}
	}
	for _, a := range cfg.Agents {
		if !routes[a.Model] && unserved(a.Model) {
			return "agents." + a.Name + ".model", a.Model
		}
	}
	return "", ""
}
