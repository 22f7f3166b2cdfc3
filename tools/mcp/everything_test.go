package mcp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingDir holds the pinned reference server: npm ci --prefix tools/mcp/testdata/everything.
// It runs on the Node 22 pinned beside the conformance suite.
const everythingDir = "testdata/everything"

const everythingEntry = "@modelcontextprotocol/server-everything/dist/index.js"

// everythingTools lists the server's tools with a plain SDK client (no capabilities, as
// echogate's client): what the Manager must offer, prefixed.
func everythingTools(t *testing.T, transport sdk.Transport) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// Capabilities as echogate's client with an Elicitor: form and URL elicitation.
	opts := &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
		Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: ElicitDecline}, nil
		}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "check", Version: "1"}, opts).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect to server-everything: %v", err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("list server-everything's tools: %v", err)
		}
		names = append(names, "everything__"+tool.Name)
	}
	slices.Sort(names)
	if len(names) < 5 {
		t.Fatalf("server-everything lists %v, want its tools", names)
	}
	return names
}

func checkEverything(t *testing.T, sc ServerConfig, want []string) {
	t.Helper()
	cfg := fastConfig(sc)
	var asked []Elicitation
	cfg.Elicit = func(_ context.Context, e Elicitation) (ElicitAnswer, error) {
		asked = append(asked, e) // one call at a time
		return ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "Ada Lovelace"}}, nil
	}
	m, reg := start(t, cfg)
	waitFor(t, m, fmt.Sprintf("server-everything's tools %v", want), func() bool { return slices.Equal(names(reg), want) })
	res := call(t, reg, "everything__echo", `{"message":"hello from echogate"}`)
	if res.IsError || !strings.Contains(res.Content, "hello from echogate") {
		t.Errorf("everything__echo = %+v, want the message echoed", res)
	}
	res = call(t, reg, "everything__get-sum", `{"a":2,"b":40}`)
	if res.IsError || !strings.Contains(res.Content, "42") {
		t.Errorf("everything__get-sum(2, 40) = %+v, want 42", res)
	}
	// An elicitation answered: the server asks during the call, the caller's answer reaches it.
	res = callAs(t, reg, "everything__trigger-elicitation-request", "slack:UADA")
	if res.IsError || !strings.Contains(res.Content, "Ada Lovelace") || !strings.Contains(res.Content, "It was a dark and stormy night.") {
		t.Errorf("everything__trigger-elicitation-request = %+v, want the answer and the schema's default echoed", res)
	}
	if len(asked) != 1 || asked[0].Caller.UserID != "slack:UADA" || asked[0].Mode != "form" {
		t.Errorf("questions asked = %+v, want one form put to slack:UADA", asked)
	}
}

func TestServerEverythingOverStdio(t *testing.T) {
	node, script := pinnedNode(t), npmEntry(t, everythingDir, everythingEntry)
	want := everythingTools(t, &sdk.CommandTransport{Command: exec.Command(node, script, "stdio")})
	checkEverything(t, ServerConfig{Name: "everything", Command: node, Args: []string{script, "stdio"}, Safety: "safe"}, want)
}

func TestServerEverythingOverStreamableHTTP(t *testing.T) {
	node, script := pinnedNode(t), npmEntry(t, everythingDir, everythingEntry)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// It says on stderr when it listens; the rest of its stderr is drained until it exits.
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "listening on port") {
				said = true
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(bound):
		t.Fatalf("server-everything did not say it listens on %d within %s", port, bound)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	want := everythingTools(t, &sdk.StreamableClientTransport{Endpoint: url})
	checkEverything(t, ServerConfig{Name: "everything", URL: url, Safety: "safe"}, want)
}
