package router

import (
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/tools"
)

func testModels(names ...string) map[string]agent.Model {
	m := map[string]agent.Model{}
	for _, n := range names {
		m[n] = agenttest.NewScriptedModel()
	}
	return m
}

func userReq(text string) agent.Request {
	return agent.Request{Model: "light", Messages: []echogate.Message{
		{Role: echogate.RoleSystem, Content: "You are a bot."},
		{Role: echogate.RoleUser, Content: text},
	}}
}

func TestChoose(t *testing.T) {
	r, err := New(Config{
		Routes: []Route{
			{Name: "vision", When: RuleAttachments, Model: "vision"},
			{Name: "code", When: RuleCode, Model: "strong", Fallback: []string{"light"}},
			{Name: "long", When: RuleLong, Model: "strong", Fallback: []string{"light"}},
			{Name: "tools", When: RuleTools, Model: "tooly", Fallback: []string{"light"}},
			{Name: "light", When: RuleDefault, Model: "light", Fallback: []string{"strong"}},
		},
		LongChars:        100,
		LongContextChars: 1000,
		UserModels:       map[string]string{"slack:UBOSS": "strong"},
		ChannelModels:    map[string]string{"slack:CDEV": "tooly"},
	}, testModels("light", "strong", "vision", "tooly"), nil)
	if err != nil {
		t.Fatal(err)
	}
	withTools := func(req agent.Request) agent.Request {
		req.Tools = []tools.Spec{{Name: "http_fetch"}}
		return req
	}
	withHints := func(req agent.Request, h agent.Hints) agent.Request { req.Hints = h; return req }
	longHistory := userReq("and now?")
	longHistory.Messages = append([]echogate.Message{{Role: echogate.RoleUser, Content: strings.Repeat("x", 990)},
		{Role: echogate.RoleAssistant, Content: "ok"}}, longHistory.Messages...)
	withImage := userReq("what is this?")
	withImage.Messages[1].Images = []echogate.ImagePart{{URL: "https://example.com/a.png"}}

	for name, tt := range map[string]struct {
		req        agent.Request
		wantRoute  string
		wantModels string
		wantReason string
	}{
		"short question":   {userReq("What is the capital of France?"), "light", "light,strong", "route light: default"},
		"fenced code":      {userReq("Why does this fail?\n```go\nx := 1\n```"), "code", "strong,light", "route code: fenced code block"},
		"tilde fence":      {userReq("~~~\nfoo()\n~~~"), "code", "strong,light", "fenced code block"},
		"code markers":     {userReq("func main() {\n\tx := compute()\n}"), "code", "strong,light", "code markers: func"},
		"stack trace":      {userReq("Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    import foo"), "code", "strong,light", "stack trace"},
		"prose with semis": {userReq("I like tea; you like coffee."), "light", "light,strong", "route light: default"},
		"long message":     {userReq(strings.Repeat("word ", 30)), "long", "strong,light", "message of 150 chars > 100"},
		"long context":     {longHistory, "long", "strong,light", "conversation of"},
		"attachments hint": {withHints(userReq("look"), agent.Hints{Attachments: 2}), "vision", "vision", "route vision: 2 attachments"},
		"image part":       {withImage, "vision", "vision", "1 image"},
		"action with tools": {withTools(userReq("Please search the web for the latest Go release")), "tools", "tooly,light",
			"asks for an action (search)"},
		"can you fetch":       {withTools(userReq("hey, can you fetch that page for me")), "tools", "tooly,light", "(fetch)"},
		"url with tools":      {withTools(userReq("what does https://go.dev/doc say about modules")), "tools", "tooly,light", "(url)"},
		"action without tool": {userReq("search the web for news"), "light", "light,strong", "default"},
		"question with tools": {withTools(userReq("why is the sky blue?")), "light", "light,strong", "default"},
		"override wins":       {withHints(userReq("hi"), agent.Hints{Override: "vision"}), "override", "vision,light,strong", "override vision (requested)"},
		"override beats code": {withHints(userReq("```\nx\n```"), agent.Hints{Override: "light"}), "override", "light,strong", "override light"},
		"unknown override": {withHints(userReq("hi"), agent.Hints{Override: "gpt-9"}), "light", "light,strong",
			"override gpt-9 ignored: unknown model"},
		"user override":    {withHints(userReq("hi"), agent.Hints{UserID: "slack:UBOSS", Channel: "slack:CDEV"}), "override", "strong,light", "(user slack:UBOSS)"},
		"channel override": {withHints(userReq("hi"), agent.Hints{UserID: "slack:U1", Channel: "slack:CDEV"}), "override", "tooly,light,strong", "(channel slack:CDEV)"},
		"agent's route":    {withHints(userReq("```\nx\n```"), agent.Hints{Route: "tools"}), "tools", "tooly,light", "route tools: named by the agent profile"},
		"unknown route":    {withHints(userReq("hi"), agent.Hints{Route: "nope"}), "light", "light,strong", "route light: default"},
	} {
		got, err := r.Choose(tt.req)
		if err != nil {
			t.Errorf("%s: Choose = error %v, want route %s", name, err, tt.wantRoute)
			continue
		}
		if got.Route != tt.wantRoute || strings.Join(got.Models, ",") != tt.wantModels || !strings.Contains(got.Reason, tt.wantReason) {
			t.Errorf("%s: Choose = {%s %v %q}, want {%s [%s] …%q…}", name, got.Route, got.Models, got.Reason, tt.wantRoute, tt.wantModels, tt.wantReason)
		}
	}
}

func TestChooseWithoutRoutes(t *testing.T) {
	r, err := New(Config{Routes: []Route{{Name: "code", When: RuleCode, Model: "strong"}}}, testModels("light", "strong"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Choose(userReq("hello"))
	if err != nil || got.Route != "default" || strings.Join(got.Models, ",") != "light" {
		t.Errorf("Choose(no match) = %+v, %v, want the request's model light", got, err)
	}
	req := userReq("hello")
	req.Model = "gpt-unknown"
	if _, err := r.Choose(req); err == nil || !strings.Contains(err.Error(), `"gpt-unknown"`) {
		t.Errorf("Choose(unknown request model) = %v, want an error naming the model", err)
	}
}

func TestNewValidates(t *testing.T) {
	models := testModels("light", "strong")
	for name, tt := range map[string]struct {
		cfg    Config
		models map[string]agent.Model
		want   string
	}{
		"no models":          {Config{}, nil, "no models"},
		"nil model":          {Config{}, map[string]agent.Model{"x": nil}, "has no provider"},
		"route without name": {Config{Routes: []Route{{Model: "light"}}}, models, "route 1 has no name"},
		"duplicate name": {Config{Routes: []Route{{Name: "a", When: RuleCode, Model: "light"}, {Name: "a", Model: "light"}}}, models,
			`"a" is used twice`},
		"unknown rule":      {Config{Routes: []Route{{Name: "a", When: "smart", Model: "light"}}}, models, `unknown rule "smart": use one of long, code`},
		"default not last":  {Config{Routes: []Route{{Name: "a", Model: "light"}, {Name: "b", When: RuleCode, Model: "strong"}}}, models, "move it last"},
		"no model":          {Config{Routes: []Route{{Name: "a"}}}, models, "route a has no model"},
		"unknown model":     {Config{Routes: []Route{{Name: "a", Model: "gpt-9"}}}, models, `"gpt-9", which no provider serves: add it to a provider's models or use one of light, strong`},
		"unknown fallback":  {Config{Routes: []Route{{Name: "a", Model: "light", Fallback: []string{"gpt-9"}}}}, models, "route a fallback"},
		"repeated model":    {Config{Routes: []Route{{Name: "a", Model: "light", Fallback: []string{"light"}}}}, models, "lists model \"light\" twice"},
		"unknown default":   {Config{Default: "zzz", Routes: []Route{{Name: "a", Model: "light"}}}, models, `default route "zzz" does not exist`},
		"user override":     {Config{UserModels: map[string]string{"slack:U1": "gpt-9"}}, models, "user slack:U1"},
		"channel override":  {Config{ChannelModels: map[string]string{"slack:C1": "gpt-9"}}, models, "channel slack:C1"},
		"negative long":     {Config{LongChars: -1}, models, "long_chars -1 is negative"},
		"negative cooldown": {Config{Breaker: BreakerConfig{CoolDown: -1}}, models, "cool-down -1ns is negative"},
	} {
		_, err := New(tt.cfg, tt.models, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error containing %q", name, err, tt.want)
		}
	}
	if _, err := New(Config{}, models, nil); err != nil {
		t.Errorf("New(zero config) = %v, want nil", err)
	}
}

func TestLooksLikeCode(t *testing.T) {
	for text, want := range map[string]bool{
		"":                                   false,
		"How do I cook rice?":                false,
		"Meeting at 10; bring notes; thanks": false,
		"I'll return the book tomorrow.":     false,
		"Please select a color from the list; if you can, for me:\nprint it": false,
		"```\nls -la\n```":                                          true,
		"def add(a, b):\n    return a + b":                          true,
		"SELECT name FROM users WHERE id = 1;\nimport os":           true,
		"int x = 1;\nint y = 2;\nprintf(\"%d\", x + y);":            true,
		"$ go test ./...\npanic: runtime error: index out of range": true,
		"const x = () => 1;\nconsole.log(x());":                     true,
	} {
		if got, why := looksLikeCode(text); got != want {
			t.Errorf("looksLikeCode(%q) = %v (%s), want %v", text, got, why, want)
		}
	}
}

func TestAsksForAction(t *testing.T) {
	for text, want := range map[string]string{
		"search for flights to Paris":         "search",
		"Please, could you remember my name?": "remember",
		"Can you check the build status":      "check",
		"what's the weather":                  "",
		"I want to find peace":                "",
		"summarize https://example.com/post":  "url",
	} {
		got, _ := asksForAction(text)
		if got != want {
			t.Errorf("asksForAction(%q) = %q, want %q", text, got, want)
		}
	}
}
