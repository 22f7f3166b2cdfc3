package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/slack"
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
	checks = append(checks, doctorPlatforms(ctx, client, cfg)...)
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
			c.detail, c.fix, _ = channels.RateLimitAdvice(base, "GET /models", &channels.StatusError{Status: resp.StatusCode, Header: resp.Header})
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

// doctorPlatforms runs the Slack and Discord adapters' connection checks on the configured
// tokens.
func doctorPlatforms(ctx context.Context, client *http.Client, cfg *Config) []check {
	var out []check
	for _, k := range []channels.Checker{
		slack.NewChecker(slack.Config{BotToken: cfg.Slack.BotToken, AppToken: cfg.Slack.AppToken, APIURL: cfg.Slack.APIURL}, client,
			func(s string) bool { return slackScopeNeeded(cfg, s) }), // schedule_doctor.go
		discord.NewChecker(discord.Config{Token: cfg.Discord.Token, APIURL: cfg.Discord.APIURL, MessageContent: cfg.Discord.messageContent()}, client),
	} {
		for _, f := range k.Check(ctx) {
			out = append(out, check{name: f.Name, ok: f.OK, skipped: f.Skipped, detail: f.Detail, fix: f.Fix})
		}
	}
	return out
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
