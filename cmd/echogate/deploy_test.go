package main

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestContainerFiles: the build context leaves out history, binaries, local state and secrets;
// every ECHOGATE_* variable docker-compose.yml and deploy/env.example set is one the gateway
// reads (a typo there would stop the container); the database password is not in the file.
func TestContainerFiles(t *testing.T) {
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(ignore), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{".git", "bin/", "data/", ".env", "echogate.yaml"} {
		if !lines[want] {
			t.Errorf(".dockerignore lacks %q", want)
		}
	}

	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	gw := compose.Services["echogate"]
	var names []string
	for k := range gw.Environment {
		names = append(names, k+"=x")
	}
	if _, ok := gw.Environment["DATABASE_URL"]; !ok {
		t.Errorf("docker-compose.yml does not pass DATABASE_URL to the gateway")
	} // the other settings come from .env (TestComposeLeavesTheConfigToTheFile)
	if pw := compose.Services["db"].Environment["POSTGRES_PASSWORD"]; !strings.HasPrefix(pw, "${") {
		t.Errorf("POSTGRES_PASSWORD = %q in docker-compose.yml, want it from .env", pw)
	}
	if img := compose.Services["db"].Image; !strings.Contains(img, "pg15") {
		t.Errorf("db image %q: want PostgreSQL 15, what the tests run against", img)
	}
	f, err := os.Open("../../deploy/env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l = strings.TrimSpace(strings.TrimPrefix(l, "#")); strings.HasPrefix(l, "ECHOGATE_") || strings.Contains(l, "_TOKEN=") {
			names = append(names, l) // the commented-out settings are names to check too
		}
	}
	if err := checkEnvNames(names); err != nil {
		t.Errorf("container environment: %v", err)
	}
}
