package skills

import (
	"slices"
	"strings"
	"testing"
)

const okDesc = "description: Checks a thing. Use when asked to check it.\n"

func TestParseValidation(t *testing.T) {
	for name, tt := range map[string]struct {
		folder, md string
		wantOK     bool   // the skill is loaded
		wantField  string // the field of the first problem ("" when none expected)
		wantMsg    string // part of the problem's text
	}{
		"minimal":             {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "---\nbody", true, "", ""},
		"digits":              {"v2-notes", "---\nname: v2-notes\n" + okDesc + "---\n", true, "", ""},
		"uppercase":           {"Pdf-Tools", "---\nname: Pdf-Tools\n" + okDesc + "---\n", false, "name", `use "pdf-tools"`},
		"underscore":          {"pdf_tools", "---\nname: pdf_tools\n" + okDesc + "---\n", false, "name", `has the character '_'`},
		"space":               {"pdf tools", "---\nname: pdf tools\n" + okDesc + "---\n", false, "name", `has the character ' '`},
		"leading hyphen":      {"-pdf", "---\nname: \"-pdf\"\n" + okDesc + "---\n", false, "name", "starts or ends with a hyphen"},
		"trailing hyphen":     {"pdf-", "---\nname: pdf-\n" + okDesc + "---\n", false, "name", "starts or ends with a hyphen"},
		"double hyphen":       {"pdf--tools", "---\nname: pdf--tools\n" + okDesc + "---\n", false, "name", "two hyphens in a row"},
		"64 chars":            {strings.Repeat("a", 64), "---\nname: " + strings.Repeat("a", 64) + "\n" + okDesc + "---\n", true, "", ""},
		"65 chars":            {strings.Repeat("a", 65), "---\nname: " + strings.Repeat("a", 65) + "\n" + okDesc + "---\n", false, "name", "65 characters, longer than the 64 allowed"},
		"name not folder":     {"pdf-tools", "---\nname: pdf-kit\n" + okDesc + "---\n", false, "name", `does not match the folder's name "pdf-tools"`},
		"missing name":        {"pdf-tools", "---\n" + okDesc + "---\n", false, "name", "is missing"},
		"name is a list":      {"pdf-tools", "---\nname: [a]\n" + okDesc + "---\n", false, "name", "must be a string"},
		"missing description": {"pdf-tools", "---\nname: pdf-tools\n---\n", false, "description", "is missing"},
		"empty description":   {"pdf-tools", "---\nname: pdf-tools\ndescription: \"  \"\n---\n", false, "description", "is empty"},
		"1024 description":    {"pdf-tools", "---\nname: pdf-tools\ndescription: " + strings.Repeat("é", 1024) + "\n---\n", true, "", ""},
		"1025 description":    {"pdf-tools", "---\nname: pdf-tools\ndescription: " + strings.Repeat("x", 1025) + "\n---\n", false, "description", "1025 characters, longer than the 1024 allowed"},
		"500 compatibility":   {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "compatibility: " + strings.Repeat("c", 500) + "\n---\n", true, "", ""},
		"501 compatibility":   {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "compatibility: " + strings.Repeat("c", 501) + "\n---\n", false, "compatibility", "501 characters"},
		"number compat":       {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "compatibility: 3\n---\n", false, "compatibility", "must be a string"},
		"bad YAML":            {"pdf-tools", "---\nname: pdf-tools\ndescription: [oops\n---\n", false, "", "not valid YAML"},
		"duplicate key":       {"pdf-tools", "---\nname: pdf-tools\nname: pdf-tools\n" + okDesc + "---\n", false, "", `key "name" is given twice`},
		"list front matter":   {"pdf-tools", "---\n- a\n---\n", false, "", "must be a YAML mapping"},
		"no front matter":     {"pdf-tools", "# Title\n", false, "", "does not start with YAML front matter"},
		"unclosed":            {"pdf-tools", "---\nname: pdf-tools\n" + okDesc, false, "", "not closed"},
		"empty front matter":  {"pdf-tools", "---\n---\nbody", false, "description", "is missing"},
		"unknown key kept":    {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "author: sre\n---\n", true, "author", "echogate keeps it"},
		"metadata not map":    {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "metadata: x\n---\n", true, "metadata", "is not a map; ignored"},
		"tools bad type":      {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "allowed-tools: {a: b}\n---\n", false, "allowed-tools", "space-separated string or a list"},
		"tools arg pattern":   {"pdf-tools", "---\nname: pdf-tools\n" + okDesc + "allowed-tools: Bash(git:*) Read\n---\n", true, "allowed-tools", "argument patterns are not supported"},
		"CRLF":                {"pdf-tools", "---\r\nname: pdf-tools\r\n" + okDesc + "---\r\nbody\r\n", true, "", ""},
	} {
		sk, ps := Parse(tt.folder, tt.folder+"/SKILL.md", []byte(tt.md))
		if (sk != nil) != tt.wantOK {
			t.Errorf("%s: Parse loaded = %v, want %v (problems %v)", name, sk != nil, tt.wantOK, ps)
			continue
		}
		if tt.wantMsg == "" {
			if len(ps) > 0 {
				t.Errorf("%s: Parse problems = %v, want none", name, ps)
			}
			continue
		}
		if len(ps) == 0 {
			t.Errorf("%s: Parse problems = none, want one about %q", name, tt.wantMsg)
			continue
		}
		p := ps[0]
		if p.Field != tt.wantField || !strings.Contains(p.Error(), tt.wantMsg) || p.Fix == "" || !strings.Contains(p.Error(), tt.folder+"/SKILL.md") {
			t.Errorf("%s: Parse problem = %q (field %q, fix %q), want field %q, the file, a fix and %q", name, p.Error(), p.Field, p.Fix, tt.wantField, tt.wantMsg)
		}
		if p.Warning != tt.wantOK {
			t.Errorf("%s: problem %q Warning = %v, want %v", name, p.Error(), p.Warning, tt.wantOK)
		}
	}
}

func TestParseFields(t *testing.T) {
	md := "---\nname: release\ndescription: >\n  Cut a release.\n  Use when asked.\nlicense: MIT\ncompatibility: Needs git\n" +
		"metadata:\n  owner: sre\n  version: 1.0\nallowed-tools:\n  - run_command\n  - http_*\nx-team: [a, b]\n---\n\n# Steps\n\nTag it.\n"
	sk, ps := Parse("release", "release/SKILL.md", []byte(md))
	if sk == nil {
		t.Fatalf("Parse = nil, %v", ps)
	}
	if got, want := sk.Description, "Cut a release. Use when asked.\n"; got != want {
		t.Errorf("Description = %q, want %q", got, want)
	}
	if sk.License != "MIT" || sk.Compatibility != "Needs git" {
		t.Errorf("License, Compatibility = %q, %q, want MIT, Needs git", sk.License, sk.Compatibility)
	}
	if got := sk.Metadata; got["owner"] != "sre" || got["version"] != "1.0" {
		t.Errorf("Metadata = %v, want owner sre and version 1.0 as written", got)
	}
	if got, want := sk.AllowedTools, []string{"run_command", "http_*"}; !slices.Equal(got, want) {
		t.Errorf("AllowedTools = %q, want %q", got, want)
	}
	if got, ok := sk.Extra["x-team"].([]any); !ok || len(got) != 2 {
		t.Errorf("Extra[x-team] = %#v, want the list kept", sk.Extra["x-team"])
	}
	if got, want := sk.Body, "# Steps\n\nTag it."; got != want {
		t.Errorf("Body = %q, want %q", got, want)
	}
	if len(ps) != 1 || ps[0].Field != "x-team" || !ps[0].Warning {
		t.Errorf("problems = %v, want one warning about x-team", ps)
	}
	// allowed-tools as a space-separated string; an explicit empty value keeps only the skill tools.
	for md, want := range map[string][]string{
		"allowed-tools: run_command  current_time": {"run_command", "current_time"},
		"allowed-tools: \"\"":                      {},
		"allowed-tools: []":                        {},
	} {
		sk, ps := Parse("x", "x/SKILL.md", []byte("---\nname: x\n"+okDesc+md+"\n---\n"))
		if sk == nil || !slices.Equal(sk.AllowedTools, want) || sk.AllowedTools == nil {
			t.Errorf("Parse(%s).AllowedTools = %#v (problems %v), want %#v", md, sk, ps, want)
		}
	}
	if sk, _ := Parse("x", "x/SKILL.md", []byte("---\nname: x\n"+okDesc+"---\n")); sk == nil || sk.AllowedTools != nil {
		t.Errorf("Parse without allowed-tools: AllowedTools = %#v, want nil (no narrowing)", sk)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("x", "---\nname: x\n"+okDesc+"---\nbody")
	f.Add("x", "---\nname: [\n---\n")
	f.Add("x", "---\r\n---\r\n")
	f.Add("x", "---\nmetadata: {a: {b: c}}\nallowed-tools: [[x]]\n---\n")
	f.Fuzz(func(t *testing.T, folder, md string) {
		sk, ps := Parse(folder, "f", []byte(md))
		if sk != nil && (sk.Name != folder || Errors(ps)) {
			t.Fatalf("Parse(%q) loaded %q with problems %v", md, sk.Name, ps)
		}
		if sk == nil && !Errors(ps) {
			t.Fatalf("Parse(%q) skipped the skill without an error", md)
		}
	})
}
