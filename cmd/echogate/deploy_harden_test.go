package main

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Issue 36, finding 2: the shipped compose file runs the gateway with no new privileges, no
// capabilities and a read-only root, so run_command's children gain nothing by escaping their
// arguments' confinement (see README, "Running commands safely").
func TestComposeHardensTheGateway(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			SecurityOpt []string `yaml:"security_opt"`
			CapDrop     []string `yaml:"cap_drop"`
			ReadOnly    bool     `yaml:"read_only"`
			Tmpfs       []string `yaml:"tmpfs"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	gw := compose.Services["echogate"]
	if !slices.Contains(gw.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("echogate security_opt = %q, want no-new-privileges:true", gw.SecurityOpt)
	}
	if !slices.Contains(gw.CapDrop, "ALL") {
		t.Errorf("echogate cap_drop = %q, want ALL", gw.CapDrop)
	}
	if !gw.ReadOnly || !slices.ContainsFunc(gw.Tmpfs, func(s string) bool { return len(s) >= 4 && s[:4] == "/tmp" }) {
		t.Errorf("echogate read_only = %v, tmpfs = %q, want a read-only root with a tmpfs /tmp", gw.ReadOnly, gw.Tmpfs)
	}
}
