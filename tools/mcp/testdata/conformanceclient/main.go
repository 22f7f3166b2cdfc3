// Command conformanceclient is echogate's MCP client as the conformance suite
// (@modelcontextprotocol/conformance) drives it: the suite runs it with the scenario's server
// URL as its argument and the scenario in MCP_CONFORMANCE_SCENARIO (its context, e.g. a
// pre-registered client, in MCP_CONFORMANCE_CONTEXT). It uses tools/mcp as the gateway does: a
// Manager connects, lists and registers the server's tools, and calls one through the
// registry; auth scenarios log in with Logins.Begin/Complete, the "browser" being an HTTP
// client that opens the authorization URL and reads the redirect back.
//
// TestConformanceClientScenarios builds and runs it; it is not part of the gateway.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/mcp"
)

const (
	server   = "conf"
	redirect = "http://localhost:3000/callback"
	// cimdURL is the Client ID Metadata Document URL the suite's CIMD scenario expects.
	cimdURL = "https://conformance-test.local/client-metadata.json"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatalf("usage: %s SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)", os.Args[0])
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var cctx map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cctx); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, scenario, os.Args[1], cctx); err != nil {
		log.Fatalf("scenario %q failed: %v", scenario, err)
	}
}

func run(ctx context.Context, scenario, serverURL string, cctx map[string]any) error {
	sc := mcp.ServerConfig{Name: server, URL: serverURL, Safety: "safe"}
	cfg := mcp.Config{ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond, ConnectTimeout: 10 * time.Second,
		// The person accepts the form as offered: the schema's defaults fill it (SEP-1034).
		Elicit: func(context.Context, mcp.Elicitation) (mcp.ElicitAnswer, error) {
			return mcp.ElicitAnswer{Action: mcp.ElicitAccept}, nil
		}}
	isAuth := strings.HasPrefix(scenario, "auth/")
	if isAuth {
		sc.Auth, sc.ClientMetadataURL = mcp.AuthOAuth, cimdURL
		if id, ok := cctx["client_id"].(string); ok {
			sc.ClientID = id
			sc.ClientSecret, _ = cctx["client_secret"].(string)
		}
		cfg.Tokens, cfg.OAuthRedirectURL = mcp.NewMemoryTokenStore(), redirect
	}
	cfg.Servers = []mcp.ServerConfig{sc}
	reg, err := tools.NewRegistry()
	if err != nil {
		return err
	}
	m, err := mcp.New(cfg, reg, nil, nil)
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(rctx) }()
	defer func() { stop(); <-done }()

	switch {
	case isAuth:
		return authScenario(ctx, m, reg)
	case scenario == "tools_call":
		if err := connected(ctx, m, reg, server+"__add_numbers"); err != nil {
			return err
		}
		return callTool(ctx, reg, server+"__add_numbers", `{"a":5,"b":3}`)
	case scenario == "elicitation-sep1034-client-defaults":
		const tool = server + "__test_client_elicitation_defaults"
		if err := connected(ctx, m, reg, tool); err != nil {
			return err
		}
		return callTool(ctx, reg, tool, `{}`)
	case scenario == "sse-retry":
		// The server closes the call's event stream; the answer comes on the resumed one.
		if err := connected(ctx, m, reg, server+"__test_reconnection"); err != nil {
			return err
		}
		return callTool(ctx, reg, server+"__test_reconnection", `{}`)
	default: // initialize and the like: connect and list
		return connected(ctx, m, reg, "")
	}
}

// authScenario logs in whenever the server needs it (the first time, and again when it asks
// for more scope: at most maxLogins times, as a person would not be asked forever), then calls
// test-tool.
func authScenario(ctx context.Context, m *mcp.Manager, reg *tools.Registry) error {
	const tool = server + "__test-tool"
	const maxLogins = 3
	logins := 0
	for {
		if err := waitLoginOrTool(ctx, m, reg, tool); err != nil {
			return err
		}
		if m.Status()[0].NeedsLogin {
			if logins == maxLogins {
				return fmt.Errorf("the server still refuses after %d logins: %s", logins, m.Status()[0].LastError)
			}
			logins++
			if err := login(ctx, m); err != nil {
				return err
			}
			// The login reconnects the server: wait for it to be up again, refused again, or
			// failing otherwise (which ends the scenario).
			if err := wait(ctx, m, func() bool {
				st := m.Status()[0]
				return st.Connected || st.NeedsLogin || (st.LastError != "" && !strings.HasPrefix(st.LastError, "logged in"))
			}); err != nil {
				return err
			}
			if st := m.Status()[0]; !st.Connected && !st.NeedsLogin {
				return fmt.Errorf("after %d logins the server fails: %s", logins, st.LastError)
			}
			continue
		}
		err := callTool(ctx, reg, tool, `{}`)
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), mcp.ErrNeedsLogin.Error()) {
			return err
		}
		log.Printf("after %d logins: %v", logins, err)
		if err := wait(ctx, m, func() bool { return m.Status()[0].NeedsLogin }); err != nil {
			return err
		}
	}
}

func login(ctx context.Context, m *mcp.Manager) error {
	ls, err := m.Logins().Begin(ctx, server, "")
	if err != nil {
		return err
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ls.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("open the authorization URL: %w", err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return fmt.Errorf("authorization redirect %q: %w", resp.Header.Get("Location"), err)
	}
	q := loc.Query()
	_, err = m.Logins().Complete(ctx, q.Get("state"), q.Get("code"), q.Get("iss"))
	return err
}

// waitLoginOrTool waits until the server needs login or offers tool.
func waitLoginOrTool(ctx context.Context, m *mcp.Manager, reg *tools.Registry, tool string) error {
	return wait(ctx, m, func() bool {
		_, ok := reg.Get(tool)
		return ok || m.Status()[0].NeedsLogin
	})
}

// connected waits until the server is connected (and offers tool, when given).
func connected(ctx context.Context, m *mcp.Manager, reg *tools.Registry, tool string) error {
	return wait(ctx, m, func() bool {
		if tool != "" {
			_, ok := reg.Get(tool)
			return ok
		}
		return m.Status()[0].Connected
	})
}

func wait(ctx context.Context, m *mcp.Manager, cond func() bool) error {
	for {
		ch := m.Updated()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			st := m.Status()[0]
			return fmt.Errorf("timed out; server: connected %v, needs login %v, error %q, tools %v", st.Connected, st.NeedsLogin, st.LastError, st.Tools)
		}
	}
}

func callTool(ctx context.Context, reg *tools.Registry, name, args string) error {
	t, ok := reg.Get(name)
	if !ok {
		var have []string
		for _, s := range reg.Specs() {
			have = append(have, s.Name)
		}
		slices.Sort(have)
		return fmt.Errorf("no tool %s (have %v)", name, have)
	}
	// The call acts for a person, as a turn's calls do: a server's question goes to them.
	ctx = tools.WithCaller(ctx, tools.Caller{UserID: "conformance:user", Session: "conformance", Turn: "t1"})
	res, err := t.Call(ctx, json.RawMessage(args))
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: %s", name, res.Content)
	}
	return nil
}
