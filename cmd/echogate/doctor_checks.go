package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/tools"
)

// doctorMCPBound bounds how long doctor waits for each MCP server's first connection.
const doctorMCPBound = 20 * time.Second

// doctorMCP connects to every configured MCP server (as serve would) and reports each: its
// tools, or why it could not connect.
func doctorMCP(ctx context.Context, cfg *Config) []check {
	if len(cfg.MCP.Servers) == 0 {
		return []check{{name: "mcp", skipped: true, detail: "no servers configured (mcp.servers)"}}
	}
	fail := func(err error) []check {
		return []check{{name: "mcp", detail: err.Error(), fix: "check mcp.servers in the configuration"}}
	}
	reg, err := tools.NewRegistry()
	if err != nil {
		return fail(err)
	}
	db, closeDB, err := mcpDoctorStore(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	defer closeDB()
	m, err := newMCP(cfg, reg, slog.New(slog.DiscardHandler), metrics.New(), db, nil, nil)
	if err != nil {
		return fail(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(rctx)
	}()
	wctx, wcancel := context.WithTimeout(ctx, doctorMCPBound)
	_ = m.Ready(wctx) // the statuses below say what it found
	wcancel()
	statuses := m.Status()
	cancel()
	<-done
	out := make([]check, 0, len(statuses))
	for i, st := range statuses {
		c := check{name: "mcp:" + st.Name}
		switch {
		case st.Connected:
			c.ok = true
			c.detail = fmt.Sprintf("%s %s: %d tools (%s)", st.Transport, st.Target, len(st.Tools), capList(st.Tools, 6))
		case st.NeedsLogin:
			c.detail = "needs login: " + st.LastError
			c.fix = fmt.Sprintf("run `echogate mcp login %s` (with the gateway running, the login lands on its /oauth/callback)", st.Name)
		case st.Attempts == 0:
			c.detail = fmt.Sprintf("%s %s did not answer within %s", st.Transport, st.Target, doctorMCPBound)
			c.fix = "check that the server starts and answers the MCP handshake (run it by hand)"
		default:
			c.detail = st.LastError
			if st.Transport == "stdio" {
				c.fix = fmt.Sprintf("check mcp.servers[%d].command, args and env: the command must be on PATH and speak MCP on stdin/stdout", i)
			} else {
				c.fix = fmt.Sprintf("check mcp.servers[%d].url and headers (a token?) and that the server is reachable", i)
			}
		}
		out = append(out, c)
	}
	return out
}

func capList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … %d more", len(names)-n)
}
