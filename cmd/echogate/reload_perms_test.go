package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Finding 11: hot reload applied whatever the configuration file said, whoever could write it:
// anyone with write access to a group- or world-writable file (or its owner, another user)
// could change who may use the gateway and what its agents may do, without a restart.

func TestConfigFileTrust(t *testing.T) {
	self := os.Getuid()
	other := self + 4242
	for name, tt := range map[string]struct {
		mode os.FileMode
		uid  int
		want []string // the error names these; nil: trusted
	}{
		"private":              {0o600, self, nil},
		"world readable":       {0o644, self, nil},
		"group readable":       {0o640, self, nil},
		"root owned":           {0o644, 0, nil},
		"group writable":       {0o664, self, []string{"writable by its group", "-rw-rw-r--", "chmod 644"}},
		"world writable":       {0o606, self, []string{"writable by other users", "chmod 644"}},
		"other owner":          {0o600, other, []string{"owned by uid", "chown"}},
		"other owner writable": {0o666, other, []string{"writable by"}},
	} {
		err := configFileTrust("/etc/echogate.yaml", tt.mode, tt.uid, self)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: configFileTrust(%v, uid %d) = %v, want trusted", name, tt.mode, tt.uid, err)
		case tt.want != nil && (err == nil || !containsAll(err.Error(), append(tt.want, "/etc/echogate.yaml")...)):
			t.Errorf("%s: configFileTrust(%v, uid %d) = %v, want an error naming %q", name, tt.mode, tt.uid, err, tt.want)
		}
	}
}

// A running gateway refuses to reload a file others may write, saying which file, its mode and
// the fix, and keeps its configuration; once fixed, the next change is applied. A gateway does
// not start with such a file.
func TestReloadRefusesConfigWritableByOthers(t *testing.T) {
	model := newScriptedModel(t)
	path := filepath.Join(t.TempDir(), "echogate.yaml")
	write := func(yaml string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("budgets: {per_day_usd: 5}\n", 0o600)
	g := startGatewayFile(t, model.vars(), path)

	write("budgets: {per_day_usd: 6}\naccess: {allow: [web:only-me]}\n", 0o666)
	g.logs.waitLine(t, "configuration reload refused", path, "-rw-rw-rw-", "chmod 644")
	if strings.Contains(g.logs.String(), "configuration reloaded") {
		t.Errorf("a world-writable file was reloaded:\n%s", g.logs.String())
	}
	write("budgets: {per_day_usd: 7}\n", 0o600)
	g.logs.waitLine(t, "configuration reloaded", path)

	// At start: refused, naming the file and the fix.
	write("budgets: {per_day_usd: 8}\n", 0o664)
	vars := model.vars()
	vars["ECHOGATE_DATA_DIR"] = t.TempDir()
	vars["ECHOGATE_HTTP_ADDR"] = freeAddr(t)
	e, _, errb := testEnv(vars, "--config", path, "serve")
	if code := run(context.Background(), e); code != 1 || !containsAll(errb.String(), path, "-rw-rw-r--", "chmod 644") {
		t.Errorf("serve with a group-writable config = exit %d, stderr %q; want 1 naming the file, its mode and chmod 644", code, errb.String())
	}
}

// doctor reports the configuration file the way serve will treat it.
func TestDoctorConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "echogate.yaml")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[os.FileMode]string{0o600: "", 0o644: "", 0o660: "chmod 644", 0o646: "chmod 644"} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		c := doctorConfigFile(path)
		if want == "" && !c.ok || want != "" && (c.ok || !strings.Contains(c.detail+c.fix, want)) {
			t.Errorf("doctorConfigFile(mode %v) = %+v, want ok %v naming %q", mode, c, want == "", want)
		}
	}
	if c := doctorConfigFile(""); !c.skipped {
		t.Errorf("doctorConfigFile(no file) = %+v, want skipped", c)
	}
}
