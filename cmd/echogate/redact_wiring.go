package main

import (
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/echogate/echogate/internal/redact"
)

// secretName matches environment variable names that hold credentials.
var secretName = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY|CREDENTIAL|AUTH)`)

// newRedactor returns the pipeline's Redactor: the known token shapes plus the literal values of
// the gateway's own secrets (its configured tokens and keys, the database password, MCP and
// tracing header values, and every variable of environ whose name says it is a credential), so
// none of them is shown to the model from a tool result or posted to a channel.
func newRedactor(cfg *Config, environ []string) *redact.Redactor {
	return redact.New(secretValues(cfg, environ))
}

func secretValues(cfg *Config, environ []string) []string {
	s := []string{cfg.HTTP.AuthToken, cfg.Slack.BotToken, cfg.Slack.AppToken, cfg.Slack.SigningSecret, cfg.Discord.Token}
	for _, p := range cfg.Models.Providers {
		s = append(s, p.APIKey)
	}
	if u, err := url.Parse(cfg.Database.URL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			s = append(s, pw)
		}
	}
	for _, srv := range cfg.MCP.Servers {
		for k, v := range srv.Env {
			if secretName.MatchString(k) {
				s = append(s, v)
			}
		}
		for _, v := range srv.Headers {
			s = append(s, headerSecret(v))
		}
		s = append(s, srv.ClientSecret) // auth: oauth, a confidential client
	}
	for _, v := range cfg.Tracing.Headers {
		s = append(s, headerSecret(v))
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && secretName.MatchString(k) {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// headerSecret is the credential of a header value ("Bearer abc" → "abc").
func headerSecret(v string) string {
	if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
		return strings.TrimSpace(cred)
	}
	return v
}
