package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/echogate/echogate/internal/mcptoken"
	"github.com/echogate/echogate/internal/secretbox"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/sqlite"
	"github.com/echogate/echogate/tools/mcp"
)

// validateMCPAuth checks one server's auth keys (key is "mcp.servers[i]").
func (c *Config) validateMCPAuth(key string, s MCPServer) error {
	switch s.Auth {
	case "":
		if s.ClientID != "" || s.ClientSecret != "" || s.ClientMetadataURL != "" || len(s.Scopes) > 0 {
			return badKey(key+".auth", "client_id, client_secret, client_metadata_url and scopes apply to auth: oauth; add auth: oauth (or oauth_per_user) or remove them")
		}
		return nil
	case mcp.AuthOAuth, mcp.AuthOAuthPerUser:
	default:
		return badKey(key+".auth", "%q: use oauth (one login for the gateway) or oauth_per_user (each chat user logs in), or leave it out", s.Auth)
	}
	if s.URL == "" {
		return badKey(key+".auth", "auth: %s applies to url servers (streamable HTTP behind OAuth), not to the stdio server %q: give its credentials in env instead", s.Auth, s.Command)
	}
	if s.ClientSecret != "" && s.ClientID == "" {
		return badKey(key+".client_secret", "needs the client_id it belongs to")
	}
	return nil
}

// validateMCPOAuth checks what OAuth servers need from the rest of the configuration: the key
// that seals their grants and the address the logins come back to.
func (c *Config) validateMCPOAuth() error {
	if c.MCP.ElicitTimeout < 0 {
		return badKey("mcp.elicit_timeout", "%s is negative: give how long a server's question waits for an answer, e.g. 5m", time.Duration(c.MCP.ElicitTimeout))
	}
	if u := c.HTTP.PublicURL; u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.RawQuery != "" || pu.Fragment != "" {
			return badKey("http.public_url", "%q: want the address browsers reach the gateway at, e.g. https://gateway.example.com", u)
		}
	}
	for i, s := range c.MCP.Servers {
		if s.Auth == "" {
			continue
		}
		if _, err := secretbox.FromEnv(c.getenv()); err != nil {
			return badKey(fmt.Sprintf("mcp.servers[%d].auth", i), "server %q keeps its OAuth grant sealed in the store: %v (e.g. export %s=\"$(%s)\")", s.Name, err, secretbox.EnvVar, secretbox.HowToMake)
		}
		break
	}
	return nil
}

// getenv is the environment the configuration was read with.
func (c *Config) getenv() func(string) string {
	if c.source.getenv != nil {
		return c.source.getenv
	}
	return os.Getenv
}

// mcpRedirectURL is where authorization servers send browsers back: http.public_url, else
// http.addr (a loopback name when it binds every address), plus /oauth/callback.
func mcpRedirectURL(cfg *Config) string {
	if cfg.HTTP.PublicURL != "" {
		return strings.TrimSuffix(cfg.HTTP.PublicURL, "/") + mcp.CallbackPath
	}
	return localBase(cfg) + mcp.CallbackPath
}

// localBase is the http:// address of the gateway's HTTP server for a command on this host.
func localBase(cfg *Config) string {
	host, port, err := net.SplitHostPort(cfg.HTTP.Addr)
	if err != nil {
		return "http://" + cfg.HTTP.Addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// mcpOAuthWanted reports whether a server logs in with OAuth.
func mcpOAuthWanted(cfg *Config) bool {
	for _, s := range cfg.MCP.Servers {
		if s.Auth != "" {
			return true
		}
	}
	return false
}

// mcpTokens is the sealed grant store on the configured backend; nil without OAuth servers.
func mcpTokens(cfg *Config, db any) (mcp.TokenStore, error) {
	if !mcpOAuthWanted(cfg) {
		return nil, nil
	}
	box, err := secretbox.FromEnv(cfg.getenv())
	if err != nil {
		return nil, err
	}
	ts, ok := db.(mcptoken.Store)
	if !ok {
		return nil, fmt.Errorf("auth: oauth needs the store to keep grants; open the database first")
	}
	return mcp.NewSealedTokenStore(ts, box), nil
}

// oauthCallback serves GET /oauth/callback: the redirect back from an authorization server. It is
// open (a browser arriving from the authorization server has no token): the random single-use
// state it carries is its authentication. Without OAuth servers it is 404.
func (g *gateway) oauthCallback() http.Handler {
	var logins *mcp.Logins
	if g.mcp != nil {
		logins = g.mcp.Logins()
	}
	if logins == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no MCP server logs in with OAuth here (mcp.servers[].auth)", http.StatusNotFound)
		})
	}
	return mcp.CallbackHandler(logins, func(k mcp.TokenKey, err error) {
		if err != nil {
			g.log.Warn("MCP login refused", "server", k.Server, "err", err)
			return
		}
		g.log.Info("MCP login stored", "server", k.Server, "user", k.User)
	})
}

// mcpLoginRequest is the body of POST /api/mcp/login.
type mcpLoginRequest struct {
	Server string `json:"server"`
	// DM, when set ("slack:U123", "discord:123…"), sends the link to that approver by direct
	// message instead of answering with it (mcp_dm.go).
	DM string `json:"dm,omitempty"`
}

// mcpLoginView answers it: the URL to open (or, with dm, whom it was sent to); the redirect
// comes back to this gateway.
type mcpLoginView struct {
	Server  string    `json:"server"`
	URL     string    `json:"url,omitempty"`
	SentTo  string    `json:"sent_to,omitempty"`
	Expires time.Time `json:"expires"`
}

// handleMCPLogin begins the login of a server with auth: oauth (POST /api/mcp/login {server}).
func (g *gateway) handleMCPLogin(w http.ResponseWriter, r *http.Request) {
	var req mcpLoginRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil || req.Server == "" {
		writeError(w, http.StatusBadRequest, `want {"server": "NAME"}: the name of an MCP server with auth: oauth`)
		return
	}
	if g.mcp == nil || g.mcp.Logins() == nil {
		writeError(w, http.StatusNotFound, "no MCP server logs in with OAuth here (mcp.servers[].auth: oauth)")
		return
	}
	var platform, user string
	var rep pipeline.Replier
	if req.DM != "" {
		var code int
		var msg string
		if platform, user, rep, code, msg = g.loginDMTarget(req.DM); msg != "" {
			writeError(w, code, msg)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	start, err := g.mcp.Logins().Begin(ctx, req.Server, "")
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, mcp.ErrConfig) {
			code = http.StatusNotFound
		}
		writeError(w, code, fmt.Sprintf("begin the login of %s: %v", req.Server, err))
		return
	}
	if rep != nil {
		if err := sendLoginDM(ctx, rep, platform, user, req.Server, start); err != nil {
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
		g.log.Info("MCP login link sent by DM", "server", req.Server, "to", req.DM)
		writeJSON(w, mcpLoginView{Server: req.Server, SentTo: req.DM, Expires: start.Expires}, nil)
		return
	}
	writeJSON(w, mcpLoginView{Server: req.Server, URL: start.URL, Expires: start.Expires}, nil)
}

// mcpStatusText is one server's state in a line: connected, needs login, or the error.
func mcpStatusText(s mcp.ServerStatus) string {
	switch {
	case s.Connected:
		return fmt.Sprintf("ok (%d tools)", len(s.Tools))
	case s.NeedsLogin:
		return "needs login: " + s.LastError
	case s.Attempts == 0 && s.LastError == "":
		return "connecting"
	default:
		return fmt.Sprintf("not connected: %s (%d attempts; tools unavailable until it reconnects)", s.LastError, s.Attempts)
	}
}

// mcpDoctorStore opens the store for doctor and the mcp commands when a server logs in with
// OAuth (its grant is there); nil otherwise.
func mcpDoctorStore(ctx context.Context, cfg *Config) (db store, closeDB func(), err error) {
	if !mcpOAuthWanted(cfg) {
		return nil, func() {}, nil
	}
	s, _, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, fmt.Errorf("open the store holding the MCP grants: %w", err)
	}
	return s, func() { s.Close() }, nil
}

// Both backends keep MCP grants (migration 0016).
var (
	_ mcptoken.Store = (*sqlite.Store)(nil)
	_ mcptoken.Store = (*postgres.Store)(nil)
)
