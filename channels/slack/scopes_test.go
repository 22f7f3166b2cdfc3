package slack

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sdkMethods maps the slack-go client functions the channel calls to the Web API methods.
var sdkMethods = map[string]string{
	"AuthTestContext":                            "auth.test",
	"PostMessageContext":                         "chat.postMessage",
	"PostEphemeralContext":                       "chat.postEphemeral",
	"UpdateMessageContext":                       "chat.update",
	"DeleteMessageContext":                       "chat.delete",
	"StartStreamContext":                         "chat.startStream",
	"AppendStreamContext":                        "chat.appendStream",
	"StopStreamContext":                          "chat.stopStream",
	"AddReactionContext":                         "reactions.add",
	"RemoveReactionContext":                      "reactions.remove",
	"GetConversationRepliesContext":              "conversations.replies",
	"GetConversationHistoryContext":              "conversations.history",
	"GetUserInfoContext":                         "users.info",
	"OpenConversationContext":                    "conversations.open",
	"SetAssistantThreadsStatusContext":           "assistant.threads.setStatus",
	"SetAssistantThreadsSuggestedPromptsContext": "assistant.threads.setSuggestedPrompts",
	"SetAssistantThreadsTitleContext":            "assistant.threads.setTitle",
	"SetAgentSessionStatusContext":               "agents.sessions.setStatus",
	"PublishViewContext":                         "views.publish",
}

// The manifest requests exactly the scopes of the Web API methods the code calls, of the events
// it subscribes to and of its slash command: nothing it never uses, nothing missing.
func TestManifestScopesAreTheMethodsUsed(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`\.api\.([A-Za-z]+)\(`)
	used := map[string]bool{"files (url_private download)": true, "apps.connections.open": true}
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			method, ok := sdkMethods[m[1]]
			if !ok {
				t.Errorf("%s calls c.api.%s, which sdkMethods does not map to a Web API method: add it (and its scope to MethodScopes and the manifest)", f.Name(), m[1])
				continue
			}
			used[method] = true
		}
	}
	for m := range MethodScopes {
		if !used[m] {
			t.Errorf("MethodScopes lists %s, which the code no longer calls: remove it (and its scope, unless another use needs it)", m)
		}
	}
	for m := range used {
		if _, ok := MethodScopes[m]; !ok {
			t.Errorf("the code calls %s, which MethodScopes lacks", m)
		}
	}

	raw, err := os.ReadFile("../../docs/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Events struct {
				Bot []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
			Interactivity struct {
				On bool `yaml:"is_enabled"`
			} `yaml:"interactivity"`
		} `yaml:"settings"`
		Features struct {
			Commands []struct {
				Command string `yaml:"command"`
			} `yaml:"slash_commands"`
		} `yaml:"features"`
	}
	if err := yaml.Unmarshal(raw, &man); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	got := append([]string(nil), man.OAuth.Scopes.Bot...)
	sort.Strings(got)
	if want := RequiredScopes(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("manifest bot scopes = %v\nwant exactly the scopes used = %v", got, want)
	}
	events := append([]string(nil), man.Settings.Events.Bot...)
	sort.Strings(events)
	var wantEvents []string
	for e := range EventScopes {
		wantEvents = append(wantEvents, e)
	}
	sort.Strings(wantEvents)
	if strings.Join(events, " ") != strings.Join(wantEvents, " ") {
		t.Errorf("manifest bot events = %v, want %v", events, wantEvents)
	}
	if !man.Settings.Interactivity.On {
		t.Error("manifest: interactivity is off; the approval buttons need it")
	}
	if len(man.Features.Commands) != 1 || man.Features.Commands[0].Command != DefaultCommand {
		t.Errorf("manifest slash commands = %+v, want %s", man.Features.Commands, DefaultCommand)
	}
	for _, s := range RequiredScopes() {
		if ScopeFeature[s] == "" {
			t.Errorf("ScopeFeature lacks %s: doctor could not say what it is for", s)
		}
	}
}
