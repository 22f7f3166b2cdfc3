package mcp_test

import (
	"context"
	"log/slog"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/mcp"
)

// How cmd wires the Manager: build it on the gateway's registry, run it beside the pipeline,
// and hand the pipeline its ToolFilter.
func ExampleNew() {
	reg, _ := tools.NewRegistry( /* built-in tools */ )
	m, err := mcp.New(mcp.Config{Servers: []mcp.ServerConfig{
		{Name: "wx", Command: "wx-mcp-server", Args: []string{"--stdio"}, ToolSafety: map[string]string{"forecast": "safe"}},
		{Name: "docs", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer …"}, Safety: "safe",
			AllowChannels: []string{"slack:C0123"}},
	}}, reg, slog.Default(), nil)
	if err != nil {
		slog.Error("mcp config", "err", err) // a configuration error names the key and the fix
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = m.Run(ctx) }() // returns after ctx ends and every server is closed

	filter := m.ToolFilter()
	_ = filter("docs__search", "slack:C0999", "slack:U1") // false: docs is for slack:C0123 only
	_ = m.Status()                                        // for /readyz and the console
}
