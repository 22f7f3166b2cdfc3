package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// askingServer is an MCP server whose tools ask the client: "ask" a form (name with a
// default, and count), "open" a URL. Each returns the answer as JSON.
func askingServer(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "1"}, nil)
	answer := func(res *sdk.ElicitResult, err error) (*sdk.CallToolResult, any, error) {
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "elicit failed: " + err.Error()}}}, nil, nil
		}
		b, _ := json.Marshal(res)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "ask", Description: "asks for a name"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which name?", RequestedSchema: json.RawMessage(
				`{"type":"object","properties":{"name":{"type":"string","default":"Ada"},"count":{"type":"integer"}}}`)}))
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "open", Description: "asks to open a link"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Connect your account",
				URL: "https://auth.example/connect?x=1", ElicitationID: "el-1"}))
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

func callAs(t *testing.T, reg *tools.Registry, name, user string) tools.Result {
	t.Helper()
	tool, ok := reg.Get(name)
	if !ok {
		t.Fatalf("registry has no %s; has %v", name, names(reg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if user != "" {
		ctx = tools.WithCaller(ctx, tools.Caller{UserID: user, Session: echogate.SessionKey("s-" + user), Turn: "t1"})
	}
	res, err := tool.Call(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("%s error = %v", name, err)
	}
	return res
}

func elicitManager(t *testing.T, url string, el Elicitor, timeout time.Duration) *tools.Registry {
	t.Helper()
	cfg := fastConfig(ServerConfig{Name: "asking", URL: url, Safety: "safe"})
	cfg.Elicit, cfg.ElicitTimeout = el, timeout
	m, reg := start(t, cfg)
	waitFor(t, m, "asking__ask", has(reg, "asking__ask"))
	return reg
}

func TestElicitationGoesToTheCallerAndEndsTheCall(t *testing.T) {
	url := askingServer(t)
	var mu sync.Mutex
	var seen []Elicitation
	answers := map[string]ElicitAnswer{
		"slack:UACCEPT":   {Action: ElicitAccept, Content: map[string]any{"name": "Grace", "count": 3}},
		"slack:UDEFAULTS": {Action: ElicitAccept},
		"slack:UDECLINE":  {Action: ElicitDecline},
		"slack:UCANCEL":   {Action: ElicitCancel},
		"slack:UBOGUS":    {Action: "maybe"},
	}
	reg := elicitManager(t, url, func(ctx context.Context, e Elicitation) (ElicitAnswer, error) {
		mu.Lock()
		seen = append(seen, e)
		mu.Unlock()
		switch e.Caller.UserID {
		case "slack:UERROR":
			return ElicitAnswer{}, errors.New("could not reach the person")
		case "slack:USLOW":
			<-ctx.Done()
			return ElicitAnswer{}, ctx.Err()
		}
		return answers[e.Caller.UserID], nil
	}, 200*time.Millisecond)

	for _, tc := range []struct{ tool, user, want string }{
		{"asking__ask", "slack:UACCEPT", `"action":"accept","content":{"count":3,"name":"Grace"}`},
		{"asking__ask", "slack:UDEFAULTS", `"action":"accept","content":{"name":"Ada"}`},
		{"asking__ask", "slack:UDECLINE", `"action":"decline"`},
		{"asking__ask", "slack:UCANCEL", `"action":"cancel"`},
		{"asking__ask", "slack:UBOGUS", `"action":"decline"`},
		{"asking__ask", "slack:UERROR", `"action":"decline"`},
		{"asking__ask", "slack:USLOW", `"action":"decline"`},
		{"asking__ask", "", `"action":"decline"`}, // nobody to ask
		{"asking__open", "slack:UACCEPT", `"action":"accept"`},
	} {
		res := callAs(t, reg, tc.tool, tc.user)
		if res.IsError || !strings.Contains(res.Content, tc.want) {
			t.Errorf("%s as %q = %+v, want the server to get %s", tc.tool, tc.user, res, tc.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 8 {
		t.Fatalf("Elicitor called %d times, want 8 (not for a call acting for nobody)", len(seen))
	}
	first, last := seen[0], seen[len(seen)-1]
	if first.Server != "asking" || first.Tool != "asking__ask" || first.Mode != "form" || first.Message != "Which name?" ||
		!strings.Contains(string(first.Schema), `"default":"Ada"`) || first.Caller.Turn != "t1" {
		t.Errorf("form elicitation = %+v, want server, tool, message, schema and caller", first)
	}
	if last.Mode != "url" || last.URL != "https://auth.example/connect?x=1" || last.ID != "el-1" || last.Tool != "asking__open" {
		t.Errorf("url elicitation = %+v, want mode url, the link and its id", last)
	}
}

func TestElicitationAmbiguousBetweenPeopleIsDeclined(t *testing.T) {
	url := askingServer(t)
	asked := make(chan string, 4)
	release := make(chan struct{})
	reg := elicitManager(t, url, func(ctx context.Context, e Elicitation) (ElicitAnswer, error) {
		asked <- e.Caller.UserID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "for " + e.Caller.UserID}}, nil
	}, bound)
	first := make(chan tools.Result, 1)
	go func() { first <- callAs(t, reg, "asking__ask", "slack:UALICE") }()
	if who := <-asked; who != "slack:UALICE" {
		t.Fatalf("first question went to %s, want slack:UALICE", who)
	}
	// Bob's call is in flight with Alice's: his server's question cannot be told apart.
	res := callAs(t, reg, "asking__ask", "slack:UBOB")
	if !strings.Contains(res.Content, `"action":"decline"`) {
		t.Errorf("Bob's call while Alice's waits = %+v, want a decline", res)
	}
	select {
	case who := <-asked:
		t.Errorf("question put to %s while calls of two people were in flight, want none", who)
	default:
	}
	close(release)
	if res := <-first; !strings.Contains(res.Content, "for slack:UALICE") {
		t.Errorf("Alice's call = %+v, want her own answer", res)
	}
}

func TestWithoutElicitorServersAreNotOfferedElicitation(t *testing.T) {
	url := askingServer(t)
	m, reg := start(t, fastConfig(ServerConfig{Name: "asking", URL: url, Safety: "safe"}))
	waitFor(t, m, "asking__ask", has(reg, "asking__ask"))
	res := callAs(t, reg, "asking__ask", "slack:UALICE")
	if !strings.Contains(res.Content, "elicit failed") {
		t.Errorf("ask without an Elicitor = %+v, want the server told the client cannot elicit", res)
	}
}

// TestElicitationEndsBeforeTheCallsBound: a question is declined a little before the tool
// call's own deadline (not only at mcp.elicit_timeout), so the server gets the decline and the
// call ends with the server's answer instead of timing out.
func TestElicitationEndsBeforeTheCallsBound(t *testing.T) {
	url := askingServer(t)
	reg := elicitManager(t, url, func(ctx context.Context, e Elicitation) (ElicitAnswer, error) {
		<-ctx.Done() // nobody answers
		return ElicitAnswer{}, ctx.Err()
	}, 5*time.Second) // longer than the call's bound of 2s
	tool, _ := reg.Get("asking__ask")
	ctx, cancel := context.WithTimeout(tools.WithCaller(context.Background(), tools.Caller{UserID: "slack:UANN", Session: "s", Turn: "t"}), 2*time.Second)
	defer cancel()
	res, err := tool.Call(ctx, json.RawMessage(`{}`))
	if err != nil || !strings.Contains(res.Content, `"action":"decline"`) {
		t.Errorf("call whose question is not answered = %+v, %v; want the server's answer to a decline before the call's bound", res, err)
	}
}
