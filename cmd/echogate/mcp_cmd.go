package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/echogate/echogate/tools/mcp"
)

// cmdMCP runs `echogate mcp login|logout|status`.
func cmdMCP(ctx context.Context, e env, cfg *Config, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, "echogate mcp: name a command: login, logout, status (echogate mcp --help)")
		return 2
	}
	switch args[0] {
	case "login":
		return mcpLogin(ctx, e, cfg, args[1:])
	case "logout":
		return mcpLogout(ctx, e, cfg, args[1:])
	case "status":
		return mcpStatus(ctx, e, cfg)
	}
	fmt.Fprintf(e.stderr, "echogate mcp: unknown command %q: use login, logout or status\n", args[0])
	return 2
}

// gatewayRequest sends a request to the running gateway at http.addr with the admin token;
// an error means no gateway answered.
func gatewayRequest(ctx context.Context, cfg *Config, method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, localBase(cfg)+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.HTTP.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.HTTP.AuthToken)
	}
	return http.DefaultClient.Do(req)
}

func mcpLogin(ctx context.Context, e env, cfg *Config, args []string) int {
	fs := flag.NewFlagSet("mcp login", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	paste, dm := mcpLoginFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dm != "" && *paste {
		fmt.Fprintln(e.stderr, "echogate mcp login: --dm and --paste do not go together: --dm has the running gateway send the link, whose redirect lands there")
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(e.stderr, "echogate mcp login: give one server: the name of an mcp.servers entry with auth: oauth")
		return 2
	}
	name := fs.Arg(0)
	if !*paste {
		body, _ := json.Marshal(mcpLoginRequest{Server: name, DM: *dm})
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		resp, err := gatewayRequest(rctx, cfg, http.MethodPost, "/api/mcp/login", body)
		if err == nil {
			defer cancel()
			return mcpLoginAnswer(e, name, resp)
		}
		cancel()
		if *dm != "" {
			fmt.Fprintf(e.stderr, "echogate mcp login --dm: no gateway answers at %s (%v): the link is sent by the running gateway; start it, or log in without --dm\n", cfg.HTTP.Addr, err)
			return 1
		}
		fmt.Fprintf(e.stderr, "No gateway answers at %s: logging in with a listener on 127.0.0.1 (the browser must run on this machine; else use --paste).\n", cfg.HTTP.Addr)
	}
	db, closeDB, err := mcpDoctorStore(ctx, cfg)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate mcp login:", err)
		return 1
	}
	defer closeDB()
	if err := db.Migrate(ctx); err != nil {
		fmt.Fprintln(e.stderr, "echogate mcp login: migrate the store:", err)
		return 1
	}
	tokens, err := mcpTokens(cfg, db)
	if err != nil || tokens == nil {
		fmt.Fprintf(e.stderr, "echogate mcp login: %s: %v\n", name, orNoOAuth(err))
		return 1
	}
	lc := mcp.LoginConfig{Servers: mcpServerConfigs(cfg), Tokens: tokens}
	show := func(u string) {
		fmt.Fprintf(e.stdout, "Open this URL in a browser and approve the access (valid %s):\n\n  %s\n\n", mcp.LoginTTL, u)
	}
	var key mcp.TokenKey
	if *paste {
		key, err = mcpLoginPaste(ctx, e, cfg, lc, name, show)
	} else {
		key, err = mcp.LoginLoopback(ctx, lc, name, "", show)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "echogate mcp login %s: %v\n", name, err)
		return 1
	}
	fmt.Fprintf(e.stdout, "Logged in to MCP server %s; the grant is stored (sealed with ECHOGATE_SECRET_KEY). A running gateway reconnects it at its next attempt.\n", key.Server)
	return 0
}

// mcpLoginAnswer prints the running gateway's answer to POST /api/mcp/login.
func mcpLoginAnswer(e env, name string, resp *http.Response) int {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var v struct {
		mcpLoginView
		Error string `json:"error"`
	}
	_ = json.Unmarshal(b, &v)
	if resp.StatusCode == http.StatusOK && v.SentTo != "" {
		fmt.Fprintf(e.stdout, "Sent the authorization URL to %s by direct message (valid until %s). Its redirect lands on the running gateway; `echogate mcp status` shows the server connected once they approve.\n", v.SentTo, v.Expires.Format(time.RFC3339))
		return 0
	}
	if resp.StatusCode != http.StatusOK || v.URL == "" {
		fmt.Fprintf(e.stderr, "echogate mcp login %s: the gateway answered %s: %s\n", name, resp.Status, firstNonEmptyStr(v.Error, strings.TrimSpace(string(b))))
		return 1
	}
	fmt.Fprintf(e.stdout, "Open this URL in a browser and approve the access (valid until %s):\n\n  %s\n\nThe redirect lands on the running gateway, which stores the grant; `echogate mcp status` shows the server connected.\n", v.Expires.Format(time.RFC3339), v.URL)
	return 0
}

// mcpLoginPaste logs in on a headless host: the redirect (to the gateway's callback address,
// where nothing listens) fails to load, and the person pastes the URL it was sent to.
func mcpLoginPaste(ctx context.Context, e env, cfg *Config, lc mcp.LoginConfig, name string, show func(string)) (mcp.TokenKey, error) {
	lc.RedirectURL = mcpRedirectURL(cfg)
	l, err := mcp.NewLogins(lc)
	if err != nil {
		return mcp.TokenKey{}, err
	}
	defer l.Close()
	start, err := l.Begin(ctx, name, "")
	if err != nil {
		return mcp.TokenKey{}, err
	}
	show(start.URL)
	fmt.Fprintf(e.stdout, "The browser is then sent to %s?… (the page may not load). Paste that whole URL here and press Enter:\n", lc.RedirectURL)
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && line == "" {
		return mcp.TokenKey{}, fmt.Errorf("no URL pasted: %w", err)
	}
	return l.CompleteURL(ctx, line)
}

// mcpStatus prints each server's state: the running gateway's, else connecting as doctor does.
func mcpStatus(ctx context.Context, e env, cfg *Config) int {
	if len(cfg.MCP.Servers) == 0 {
		fmt.Fprintln(e.stdout, "No MCP servers configured (mcp.servers).")
		return 0
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if resp, err := gatewayRequest(rctx, cfg, http.MethodGet, "/api/ready", nil); err == nil {
		defer resp.Body.Close()
		detail := map[string]string{}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&detail); err != nil || resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
			fmt.Fprintf(e.stderr, "echogate mcp status: the gateway at %s answered %s\n", cfg.HTTP.Addr, resp.Status)
			return 1
		}
		var names []string
		for k := range detail {
			if strings.HasPrefix(k, "mcp:") {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(e.stdout, "%s\t%s\n", strings.TrimPrefix(k, "mcp:"), detail[k])
		}
		return 0
	}
	for _, c := range doctorMCP(ctx, cfg) {
		fmt.Fprintf(e.stdout, "%s\t%s\n", strings.TrimPrefix(c.name, "mcp:"), c.detail)
	}
	return 0
}

func orNoOAuth(err error) error {
	if err == nil {
		return errors.New("no server of mcp.servers has auth: oauth")
	}
	return err
}

func firstNonEmptyStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
