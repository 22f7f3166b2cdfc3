// Package depcheck enforces the layer rules of ARCHITECTURE.md: imports point down only, and
// siblings never import each other.
package depcheck

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/echogate/echogate"

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// rule says which project packages a package may import, by path prefix (relative to the module).
type rule struct {
	layer string
	may   []string
}

// ruleFor returns the rule of a package (path relative to the module, "" for the root).
func ruleFor(rel string) rule {
	top, rest, _ := strings.Cut(rel, "/")
	switch {
	case rel == "":
		return rule{"L0 root", nil}
	case top == "internal":
		// Besides its own tree, an internal package may use the shared primitives (one breaker,
		// one backoff, one clock), which import no other project package.
		may := []string{"", "internal/" + firstSegment(rest)}
		if !primitives[firstSegment(rest)] {
			may = append(may, "internal/breaker", "internal/backoff", "internal/clock")
		}
		return rule{"L0 internal", may}
	case top == "channels":
		// The contract package, and the adapter's own tree (channels/slack may import
		// channels/slack/slacktest), never a sibling adapter.
		own := "channels/" + firstSegment(rest)
		return rule{"L1 channels", []string{"", "internal/", "=channels", own, "channels/channeltest"}}
	case top == "storage":
		own := "storage/" + firstSegment(rest)
		return rule{"L1 storage", []string{"", "internal/", own, "storage/storagetest"}}
	case top == "memory", top == "knowledge":
		return rule{"L1 " + top, []string{"", "internal/", top}}
	case top == "tools":
		return rule{"L2 tools", []string{"", "internal/", "tools"}}
	case top == "agent":
		return rule{"L3 agent", []string{"", "internal/", "tools", "agent"}}
	case top == "pipeline":
		return rule{"L4 pipeline", []string{"", "internal/", "agent", "tools", "memory", "knowledge", "pipeline"}}
	case top == "admin":
		// The operator's HTTP API: above the pipeline it reads, and beside the web channel whose
		// request helpers it shares; nothing below imports it.
		return rule{"L4b admin", []string{"", "internal/", "agent", "tools", "memory", "knowledge", "pipeline", "channels/web", "admin"}}
	case top == "cmd" || top == "bench":
		return rule{"L5 " + top, []string{"*"}}
	}
	return rule{"unknown", nil}
}

// primitives are the internal packages every layer, internal ones included, may import: the one
// wrapper per concern. They import no project package but the root.
var primitives = map[string]bool{"breaker": true, "backoff": true, "clock": true}

func firstSegment(s string) string {
	seg, _, _ := strings.Cut(s, "/")
	return seg
}

func allowed(r rule, target string) bool {
	for _, m := range r.may {
		switch {
		case m == "*":
			return true
		case m == "":
			if target == "" {
				return true
			}
		case strings.HasPrefix(m, "="):
			if target == m[1:] {
				return true
			}
		case strings.HasSuffix(m, "/"):
			if strings.HasPrefix(target, m) {
				return true
			}
		case target == m || strings.HasPrefix(target, m+"/"):
			return true
		}
	}
	return false
}

func rel(path string) (string, bool) {
	if path == mod {
		return "", true
	}
	if strings.HasPrefix(path, mod+"/") {
		return strings.TrimPrefix(path, mod+"/"), true
	}
	return "", false
}

func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json", mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	n := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		from, _ := rel(p.ImportPath)
		r := ruleFor(from)
		if r.layer == "unknown" {
			t.Errorf("%s: package outside the known layers; add it to ARCHITECTURE.md and this test", p.ImportPath)
			continue
		}
		check := func(imports []string, kind string) {
			for _, imp := range imports {
				to, ours := rel(imp)
				if !ours {
					// Root and internal stay on the standard library (internal may use vetted
					// libraries: the Prometheus client).
					if (r.layer == "L0 root") && strings.Contains(strings.Split(imp, "/")[0], ".") {
						t.Errorf("%s (%s) imports %s: the root package uses the standard library only", p.ImportPath, r.layer, imp)
					}
					continue
				}
				if to == from {
					continue
				}
				if !allowed(r, to) {
					t.Errorf("%s (%s) %simports %s: not allowed by the layer rules", p.ImportPath, r.layer, kind, imp)
				}
			}
		}
		check(p.Imports, "")
		check(p.TestImports, "test-")
		check(p.XTestImports, "test-")
	}
	if n < 5 {
		t.Fatalf("go list found %d packages; the check is not looking at the module", n)
	}
}

func TestRuleTable(t *testing.T) {
	for _, tt := range []struct {
		from, to string
		want     bool
	}{
		{"pipeline", "agent", true},
		{"pipeline", "channels/slack", false},
		{"pipeline", "storage/sqlite", false},
		{"agent", "pipeline", false},
		{"agent/provider/openai", "tools", true},
		{"tools/builtin", "agent", false},
		{"channels/slack", "channels", true},
		{"channels/slack", "channels/slack/slacktest", true},
		{"channels/slack", "channels/discord", false},
		{"channels/web", "tools", false},
		{"storage/sqlite", "storage/storagetest", true},
		{"storage/sqlite", "storage/postgres", false},
		{"storage/sqlite", "pipeline", false},
		{"memory", "knowledge", false},
		{"", "internal/ids", false},
		{"internal/embed", "internal/breaker", true},
		{"internal/embed", "internal/ids", false},
		{"internal/breaker", "internal/clock", false},
		{"cmd/echogate", "channels/slack", true},
		{"cmd/echogate", "admin", true},
		{"admin", "pipeline", true},
		{"admin", "channels/web", true},
		{"admin", "channels/slack", false},
		{"admin", "storage/sqlite", false},
		{"pipeline", "admin", false},
		{"channels/web", "admin", false},
	} {
		if got := allowed(ruleFor(tt.from), tt.to); got != tt.want {
			t.Errorf("allowed(%q → %q) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}
