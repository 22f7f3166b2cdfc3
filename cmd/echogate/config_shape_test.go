package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestEmptyConfigFileMeansDefaults: an empty file, one of comments only, or a bare document
// marker loads as the defaults, as if no file were given.
func TestEmptyConfigFileMeansDefaults(t *testing.T) {
	none := func(string) string { return "" }
	want, err := loadConfig("", none)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"empty":         "",
		"blank lines":   "\n\n",
		"comments only": "# echogate.yaml: nothing set yet\n# agent:\n#   max_iterations: 4\n",
		"document mark": "---\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := loadConfig(p, none)
			if err != nil {
				t.Fatalf("loadConfig(%q) = %v, want the defaults", body, err)
			}
			got.source, want.source = configSource{}, configSource{}
			got.Tracing.getenv, want.Tracing.getenv = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("loadConfig(%q) = %+v, want the defaults %+v", body, got, want)
			}
		})
	}
}

// TestConfigErrorsHaveOneShape: every configuration mistake serve can find, including those it
// used to find only after opening the store (an agent's tools and model, Slack without an app
// token), is reported before anything starts as `echogate: config: FILE, line N: KEY: …` (or
// the environment variable that set it) with exit 2; a tab in the indentation is named.
func TestConfigErrorsHaveOneShape(t *testing.T) {
	listed := "models:\n  default: m1\n  providers: [{name: p, base_url: 'http://127.0.0.1:1/v1', models: [m1, m2]}]\n"
	agent := "agents:\n  - name: helper\n    match: [web]\n"
	for name, tt := range map[string]struct {
		yaml string
		vars map[string]string
		want string // the start of stderr after "echogate: config: "
	}{
		"enum":                 {yaml: "agent:\n  max_iterations: 4\n  on_busy: drop\n", want: `c.yaml, line 3: agent.on_busy: "drop": use queue or interrupt`},
		"range":                {yaml: "agent:\n  compress_threshold: 2\n", want: "c.yaml, line 2: agent.compress_threshold: 2 is out of range"},
		"map entry":            {yaml: "tools:\n  current_time:\n    approval: maybe\n", want: `c.yaml, line 3: tools.current_time.approval: "maybe"`},
		"list entry":           {yaml: listed + "  routes:\n    - {name: r, when: sometimes, model: m2}\n", want: "c.yaml, line 5: models.routes[0].when"},
		"env beats the file":   {yaml: "agent:\n  on_busy: queue\n", vars: map[string]string{"ECHOGATE_AGENT_ON_BUSY": "drop"}, want: `ECHOGATE_AGENT_ON_BUSY: agent.on_busy: "drop"`},
		"agent match":          {yaml: "agents:\n  - name: helper\n    model: m1\n", want: "c.yaml, line 2: agents.helper.match"},
		"agent tools":          {yaml: agent + "    tools: [nope_tool]\n", want: `c.yaml, line 4: agents.helper.tools: "nope_tool" matches no tool`},
		"agent memory tool":    {yaml: agent + "    tools: [remember]\n", want: `c.yaml, line 4: agents.helper.tools: "remember" matches no tool`},
		"agent tool off":       {yaml: agent + "    tools: [http_fetch]\ntools:\n  http_fetch: {enabled: false}\n", want: `c.yaml, line 4: agents.helper.tools: "http_fetch" matches no tool`},
		"agent model":          {yaml: listed + agent + "    model: gpt-nope\n", want: `c.yaml, line 7: agents.helper.model: "gpt-nope"`},
		"slack without app":    {yaml: "slack:\n  bot_token: xoxb-1\n", want: "c.yaml, line 2: slack.bot_token: "},
		"slack env only":       {vars: map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}, want: "SLACK_BOT_TOKEN: slack.bot_token: "},
		"tab":                  {yaml: "agent:\n\ton_busy: queue\n", want: "c.yaml, line 2: tabs are not allowed for indentation in YAML"},
		"yaml syntax":          {yaml: "agent: [1, 2\n", want: "c.yaml, line "},
		"unknown key keeps":    {yaml: "agent:\n  on_bsy: queue\n", want: `c.yaml, line 2: agent.on_bsy: unknown key "on_bsy"`},
		"route in no provider": {yaml: listed + "  routes: [{name: r, model: gpt-9}]\n", want: `c.yaml, line 4: models.routes[0].model: "gpt-9"`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			vars := map[string]string{"ECHOGATE_DATA_DIR": filepath.Join(dir, "data"), "ECHOGATE_HTTP_ADDR": "127.0.0.1:0"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			t.Chdir(dir)
			args := []string{"serve"}
			if tt.yaml != "" {
				if err := os.WriteFile("c.yaml", []byte(tt.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = []string{"--config", "c.yaml", "serve"}
			}
			e, _, errb := testEnv(vars, args...)
			code := run(context.Background(), e)
			msg := errb.String()
			if code != 2 {
				t.Fatalf("serve exit = %d, want 2 (stderr %q)", code, msg)
			}
			if strings.Contains(msg, "DEMO MODE") || strings.Contains(msg, "applied migration") {
				t.Errorf("stderr = %q: the mistake was found after the store was opened, want it before", msg)
			}
			rest, ok := strings.CutPrefix(msg, "echogate: config: ")
			if !ok || !strings.HasPrefix(rest, tt.want) {
				t.Errorf("stderr = %q, want %q", msg, "echogate: config: "+tt.want+"…")
			}
			if strings.Contains(msg, "found character that cannot start any token") {
				t.Errorf("stderr = %q shows the YAML parser's words, want the fix", msg)
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
				t.Errorf("the data dir was created before the configuration was rejected")
			}
		})
	}
}

// TestUnknownAgentModelMessage: the message of an unknown agent model lists the routes when
// there are some and never ends with an empty list.
func TestUnknownAgentModelMessage(t *testing.T) {
	listed := "models:\n  default: m1\n  providers: [{name: p, base_url: 'http://127.0.0.1:1/v1', models: [m1, m2]}]\n"
	agent := "agents:\n  - name: helper\n    match: [web]\n    model: gpt-nope\n"
	for name, tt := range map[string]struct {
		yaml string
		want []string
	}{
		"no routes": {yaml: listed + agent, want: []string{`"gpt-nope"`, "m1, m2", "models.routes"}},
		"routes":    {yaml: listed + "  routes: [{name: fast, model: m2}]\n" + agent, want: []string{`"gpt-nope"`, "routes: fast"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfig(p, func(string) string { return "" })
			if err == nil {
				t.Fatal("loadConfig accepted an agent model no provider serves")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("loadConfig = %q, want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "[]") {
				t.Errorf("loadConfig = %q ends with an empty list", err)
			}
		})
	}
}

// TestModelKnownWhenDecidable: a model is refused only when the configuration decides it: the
// first provider (which receives every unlisted name) lists its models. A first provider
// without `models:` and the demo model accept any name, as the endpoint may serve it.
func TestModelKnownWhenDecidable(t *testing.T) {
	agent := "agents:\n  - name: helper\n    match: [web]\n    model: gpt-nope\n"
	for name, tt := range map[string]struct {
		yaml   string
		refuse bool
	}{
		"first provider lists":        {yaml: "models:\n  providers:\n    - {name: a, base_url: 'http://127.0.0.1:1/v1', models: [m1]}\n    - {name: b, base_url: 'http://127.0.0.1:2/v1'}\n", refuse: true},
		"first provider is catch-all": {yaml: "models:\n  providers:\n    - {name: a, base_url: 'http://127.0.0.1:1/v1'}\n    - {name: b, base_url: 'http://127.0.0.1:2/v1', models: [m1]}\n"},
		"demo model":                  {yaml: ""},
		"listed by the second":        {yaml: "models:\n  providers:\n    - {name: a, base_url: 'http://127.0.0.1:1/v1', models: [m1]}\n    - {name: b, base_url: 'http://127.0.0.1:2/v1', models: [gpt-nope]}\n"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml+agent), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfig(p, func(string) string { return "" })
			if refused := err != nil; refused != tt.refuse {
				t.Errorf("loadConfig(agent model gpt-nope) = %v, want refused %v", err, tt.refuse)
			}
		})
	}
}
