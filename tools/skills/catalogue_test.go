package skills

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestCatalogueGolden(t *testing.T) {
	set, _ := Scan(Config{Dirs: []string{"testdata/spec"}})
	got := Catalogue(set, nil)
	golden := filepath.Join("testdata", "catalogue.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestCatalogueGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("Catalogue =\n%s\nwant (testdata/catalogue.golden)\n%s", got, want)
	}
}

// TestCatalogueByteStable: the catalogue is the prompt's cached prefix, so the same skills
// must give the same bytes whatever order the folders were read or written in.
func TestCatalogueByteStable(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	order := []string{"release", "incident-db", "incident-net", "sql-style"}
	for _, n := range order {
		writeSkill(t, a, n, "x", nil)
	}
	for _, n := range slices.Backward(order) {
		writeSkill(t, b, n, "x", nil)
	}
	allow := []string{"incident-*", "sql-style"}
	first := Catalogue(mustScan(t, a), allow)
	for range 10 {
		if got := Catalogue(mustScan(t, b), allow); got != first {
			t.Fatalf("Catalogue differs:\n%q\n%q", first, got)
		}
	}
	want := "## Skills\nInstalled by the operator. When one applies to the task, call the `skill` tool with its name to read its instructions and follow them; open the files they mention with `skill_file`.\n" +
		"- incident-db: The incident-db skill. Use when incident-db applies.\n" +
		"- incident-net: The incident-net skill. Use when incident-net applies.\n" +
		"- sql-style: The sql-style skill. Use when sql-style applies.\n"
	if first != want {
		t.Errorf("Catalogue = %q, want %q", first, want)
	}
}

func TestCatalogueAllowList(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"incident-db", "incident-net", "release"} {
		writeSkill(t, dir, n, "x", nil)
	}
	set := mustScan(t, dir)
	for name, tt := range map[string]struct {
		allow []string
		want  []string
	}{
		"nil is every skill": {nil, []string{"incident-db", "incident-net", "release"}},
		"empty is none":      {[]string{}, nil},
		"glob":               {[]string{"incident-*"}, []string{"incident-db", "incident-net"}},
		"exact":              {[]string{"release"}, []string{"release"}},
		"no match":           {[]string{"billing-*"}, nil},
		"question mark":      {[]string{"incident-d?"}, []string{"incident-db"}},
	} {
		if got := names(set.Allowed(tt.allow)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Allowed(%q) = %q, want %q", name, tt.allow, got, tt.want)
		}
		if got := Catalogue(set, tt.allow); (got == "") != (len(tt.want) == 0) {
			t.Errorf("%s: Catalogue(%q) = %q, want empty only without skills", name, tt.allow, got)
		}
		for _, n := range []string{"incident-db", "incident-net", "release"} {
			_, ok := set.Lookup(tt.allow, n)
			if want := slices.Contains(tt.want, n); ok != want {
				t.Errorf("%s: Lookup(%q, %s) = %v, want %v", name, tt.allow, n, ok, want)
			}
		}
	}
	if err := ValidateAllow([]string{"incident-*", "["}); err == nil {
		t.Errorf("ValidateAllow([) = nil, want an error")
	}
}

func TestAllowsToolNarrowsNeverWidens(t *testing.T) {
	narrow := &Skill{Name: "n", AllowedTools: []string{"run_command", "http_*"}}
	none := &Skill{Name: "none", AllowedTools: []string{}}
	free := &Skill{Name: "free"}
	args := &Skill{Name: "args", AllowedTools: []string{"Bash(git:*)", "run_command"}}
	for name, tt := range map[string]struct {
		agent  []string
		active []*Skill
		tool   string
		want   bool
	}{
		"no skill, all tools":             {nil, nil, "run_command", true},
		"no skill, agent list":            {[]string{"current_time"}, nil, "run_command", false},
		"skill narrows":                   {nil, []*Skill{narrow}, "current_time", false},
		"skill keeps its tool":            {nil, []*Skill{narrow}, "run_command", true},
		"skill glob":                      {nil, []*Skill{narrow}, "http_fetch", true},
		"skill cannot widen":              {[]string{"current_time"}, []*Skill{narrow}, "run_command", false},
		"intersection":                    {[]string{"http_fetch", "run_command"}, []*Skill{narrow}, "http_fetch", true},
		"skill without allowed-tools":     {[]string{"current_time"}, []*Skill{free}, "current_time", true},
		"empty list keeps skill tools":    {nil, []*Skill{none}, FileToolName, true},
		"empty list drops others":         {nil, []*Skill{none}, "current_time", false},
		"skill tools need the agent":      {[]string{"current_time"}, []*Skill{none}, SkillToolName, false},
		"two skills intersect":            {nil, []*Skill{narrow, none}, "run_command", false},
		"argument patterns match nothing": {nil, []*Skill{args}, "Bash", false},
		"plain entry beside a pattern":    {nil, []*Skill{args}, "run_command", true},
	} {
		if got := AllowsTool(tt.agent, tt.active, tt.tool); got != tt.want {
			t.Errorf("%s: AllowsTool(%q, %s) = %v, want %v", name, tt.agent, tt.tool, got, tt.want)
		}
	}
}
