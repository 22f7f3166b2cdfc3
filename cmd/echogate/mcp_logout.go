package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/echogate/echogate/tools/mcp"
)

// mcpLogout runs `echogate mcp logout NAME`: the server's grant is revoked at the authorization
// server (RFC 7009, when it offers revocation) and forgotten. With the gateway running it asks
// it (POST /api/mcp/logout), so the server's session ends there at once; else it works on the
// store directly.
func mcpLogout(ctx context.Context, e env, cfg *Config, args []string) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(e.stderr, "echogate mcp logout: give one server: the name of an mcp.servers entry with auth: oauth")
		return 2
	}
	name := args[0]
	body, _ := json.Marshal(mcpLoginRequest{Server: name})
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if resp, err := gatewayRequest(rctx, cfg, http.MethodPost, "/api/mcp/logout", body); err == nil {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			var v struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal(b, &v)
			fmt.Fprintf(e.stderr, "echogate mcp logout %s: the gateway answered %s: %s\n", name, resp.Status, firstNonEmptyStr(v.Error, strings.TrimSpace(string(b))))
			return 1
		}
		fmt.Fprintf(e.stdout, "Logged out of MCP server %s: the grant is revoked at the authorization server where it offers revocation, and forgotten; the server needs login again.\n", name)
		return 0
	}
	db, closeDB, err := mcpDoctorStore(ctx, cfg)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate mcp logout:", err)
		return 1
	}
	defer closeDB()
	if db != nil {
		if err := db.Migrate(ctx); err != nil {
			fmt.Fprintln(e.stderr, "echogate mcp logout: migrate the store:", err)
			return 1
		}
	}
	tokens, err := mcpTokens(cfg, db)
	if err != nil || tokens == nil || !mcpOAuthServer(cfg, name) {
		fmt.Fprintf(e.stderr, "echogate mcp logout %s: %v\n", name, orNoOAuth(err))
		return 1
	}
	key := mcp.TokenKey{Server: name}
	revoked := mcp.RevokeGrant(ctx, tokens, key, nil, nil)
	if err := tokens.Delete(ctx, key); err != nil {
		if errors.Is(err, mcp.ErrNoToken) {
			fmt.Fprintf(e.stdout, "MCP server %s has no stored grant: nothing to log out of.\n", name)
			return 0
		}
		fmt.Fprintf(e.stderr, "echogate mcp logout %s: %v\n", name, err)
		return 1
	}
	how := "forgotten (its authorization server offers no revocation, or refused it: see the log)"
	if revoked {
		how = "revoked at the authorization server and forgotten"
	}
	fmt.Fprintf(e.stdout, "Logged out of MCP server %s: the grant is %s.\n", name, how)
	return 0
}

// mcpOAuthServer reports whether name is a server of mcp.servers with auth: oauth.
func mcpOAuthServer(cfg *Config, name string) bool {
	for _, s := range cfg.MCP.Servers {
		if s.Name == name && s.Auth == mcp.AuthOAuth {
			return true
		}
	}
	return false
}

// handleMCPLogout logs the gateway out of a server with auth: oauth (POST /api/mcp/logout
// {server}): the grant is revoked where the authorization server offers it, and forgotten.
func (g *gateway) handleMCPLogout(w http.ResponseWriter, r *http.Request) {
	var req mcpLoginRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil || req.Server == "" {
		writeError(w, http.StatusBadRequest, `want {"server": "NAME"}: the name of an MCP server with auth: oauth`)
		return
	}
	if g.mcp == nil || !mcpOAuthServer(g.cfg, req.Server) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no MCP server %q with auth: oauth here (mcp.servers[].auth)", req.Server))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	err := g.mcp.Logout(ctx, req.Server, "")
	if errors.Is(err, mcp.ErrNoToken) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("MCP server %s has no stored grant: nothing to log out of", req.Server))
		return
	}
	writeJSON(w, map[string]string{"server": req.Server, "state": "needs login"}, wrapErr("log out of "+req.Server, err))
}
