package main

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFixed are the settings docker-compose.yml may fix whatever echogate.yaml says, and why:
// they are facts of the compose deployment, not choices a config file makes.
var composeFixed = map[string]string{
	"DATABASE_URL":       "the db service of the same file",
	"ECHOGATE_HTTP_ADDR": "the port compose publishes (127.0.0.1:8080:8080) must be the one the gateway listens on",
}

var composeDefault = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:?-`)

// TestComposeLeavesTheConfigToTheFile: docker-compose.yml passes a setting to the gateway only
// when the user sets it in .env (env_file), so an echogate.yaml mounted in deploy/config decides
// every key the user left out: no ${VAR:-default} and no fixed value for a variable the
// configuration reads, apart from composeFixed. deploy/env.example, copied to .env, leaves
// every such variable empty (an empty variable is not set) or commented out.
func TestComposeLeavesTheConfigToTheFile(t *testing.T) {
	known := map[string]bool{}
	envNames(reflect.TypeOf(Config{}), "ECHOGATE", known)
	known[envOpenAIKey], known[envOpenAIBase] = true, true
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			EnvFile     []struct{ Path string } `yaml:"env_file"`
			Environment map[string]string       `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	gw := compose.Services["echogate"]
	if len(gw.EnvFile) != 1 || gw.EnvFile[0].Path != ".env" {
		t.Errorf("echogate env_file = %+v, want .env (the user's settings reach the gateway through it)", gw.EnvFile)
	}
	for name, val := range gw.Environment {
		if !known[name] {
			continue
		}
		if composeDefault.MatchString(val) {
			t.Errorf("docker-compose.yml sets %s: %q: a default there overrides the mounted echogate.yaml; leave it to .env", name, val)
		} else if _, fixed := composeFixed[name]; !fixed && !strings.HasPrefix(val, "${") {
			t.Errorf("docker-compose.yml fixes %s: %q, which overrides the mounted echogate.yaml; leave it to .env", name, val)
		}
	}
	f, err := os.Open("../../deploy/env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		name, val, _ := strings.Cut(l, "=")
		if l == "" || strings.HasPrefix(l, "#") || !known[name] {
			continue
		}
		if val != "" {
			t.Errorf("deploy/env.example, line %d: %s=%s overrides the mounted echogate.yaml once copied to .env; leave it empty or comment it out", n, name, val)
		}
	}
}
