package main

import (
	"context"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
)

// TestDoctorChecksModelsAgainstTheEndpoint: when the first provider lists no models (the start
// cannot decide, as it sends every unlisted name there), doctor asks the endpoint's GET /models
// and names an agent's or a route's model it does not serve; one it serves passes.
func TestDoctorChecksModelsAgainstTheEndpoint(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-ok", Models: []string{"gpt-4o-mini", "gpt-4o"}})
	defer fake.Close()
	for name, tt := range map[string]struct {
		yaml string
		want string // "" = the model check passes
	}{
		"agent model served":   {yaml: "agents:\n  - {name: helper, match: [web], model: gpt-4o}\n"},
		"agent model unserved": {yaml: "agents:\n  - {name: helper, match: [web], model: gpt-4o-mni}\n", want: `does not list "gpt-4o-mni", which agents.helper.model names`},
		"route unserved":       {yaml: "models:\n  routes: [{name: big, model: gpt-5-typo}]\n", want: `which models.routes[0].model names`},
	} {
		t.Run(name, func(t *testing.T) {
			vars := map[string]string{"ECHOGATE_DATA_DIR": t.TempDir(), "OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-ok"}
			e, out, errb := testEnv(vars, "--config", writeConfig(t, tt.yaml), "doctor")
			run(context.Background(), e)
			text := out.String()
			if tt.want == "" {
				if !strings.Contains(text, "ok  model:openai") {
					t.Errorf("doctor = %s%s, want the model check to pass", text, errb)
				}
				return
			}
			if !strings.Contains(text, "!!  model:openai") || !strings.Contains(text, tt.want) {
				t.Errorf("doctor = %s%s, want a problem %q", text, errb, tt.want)
			}
		})
	}
}
