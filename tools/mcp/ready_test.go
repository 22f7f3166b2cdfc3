package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatedServer is a streamable-HTTP MCP server that holds every request until open is closed:
// a server slow to start.
func gatedServer(t *testing.T) (url string, open func()) {
	t.Helper()
	srv := newTestServer("weather", func() {})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	gate := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	opened := false
	return hs.URL, func() {
		if !opened {
			opened = true
			close(gate)
		}
	}
}

// TestReadyWaitsForASlowServer: Ready returns nil only once the slow server's tools are
// registered; a bound that ends first names the late server; a broken server settles at once
// as failed, naming why.
func TestReadyWaitsForASlowServer(t *testing.T) {
	url, open := gatedServer(t)
	t.Cleanup(open)
	m, reg := start(t, fastConfig(ServerConfig{Name: "slow", URL: url}))

	// The bound ends while the server is still answering its first request.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.Ready(ctx)
	var nr *NotReadyError
	if !errors.As(err, &nr) || len(nr.Late) != 1 || nr.Late[0] != "slow" || !strings.Contains(err.Error(), "slow (still connecting)") {
		t.Fatalf("Ready with the bound over = %v, want a NotReadyError naming slow as late", err)
	}

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		done <- m.Ready(ctx)
	}()
	open()
	if err := <-done; err != nil {
		t.Fatalf("Ready after the server answered = %v, want nil", err)
	}
	if _, ok := reg.Get("slow__weather"); !ok {
		t.Errorf("Ready returned before slow__weather was registered; registry %v", names(reg))
	}
}

func TestReadyReportsABrokenServer(t *testing.T) {
	url, open := gatedServer(t)
	open()
	m, _ := start(t, fastConfig(
		ServerConfig{Name: "gone", Command: filepath.Join(t.TempDir(), "no-such-server")},
		ServerConfig{Name: "up", URL: url},
	))
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	err := m.Ready(ctx)
	var nr *NotReadyError
	if !errors.As(err, &nr) || len(nr.Late) != 0 || !strings.Contains(nr.Failed["gone"], "no-such-server") {
		t.Fatalf("Ready = %v, want gone failed (naming its command) and nothing late", err)
	}
	if ctx.Err() != nil {
		t.Errorf("Ready waited for the whole bound; a failed server must settle at once")
	}
	if !m.Status()[1].Connected {
		t.Errorf("up not connected when Ready returned: %+v", m.Status()[1])
	}
}
