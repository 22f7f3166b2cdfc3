package main

import (
	"strings"
	"testing"
)

// doctor says plainly when a tool that needs an approver has none to ask (issue 36).
func TestDoctorApprovers(t *testing.T) {
	off := false
	for name, tt := range map[string]struct {
		cfg    Config
		ok     bool
		detail string // "" means no check at all
	}{
		"no such tool": {Config{}, true, ""},
		"run_command without approvers": {Config{Tools: map[string]ToolConf{"run_command": {Allowed: []string{"ls"}}}},
			false, "run_command need an approver's decision and approval.approvers is empty"},
		"run_command with approvers": {Config{Tools: map[string]ToolConf{"run_command": {Allowed: []string{"ls"}}},
			Approval: ApprovalConfig{Approvers: []string{"slack:U1"}}}, true, "an approver decides (slack:U1)"},
		"run_command off":       {Config{Tools: map[string]ToolConf{"run_command": {Allowed: []string{"ls"}, Enabled: &off}}}, true, ""},
		"run_command allowed":   {Config{Tools: map[string]ToolConf{"run_command": {Allowed: []string{"ls"}, Approval: "allow"}}}, true, ""},
		"approvers_only tool":   {Config{Tools: map[string]ToolConf{"pager__page": {ApproversOnly: true}}}, false, "pager__page need"},
		"approvers_only denied": {Config{Tools: map[string]ToolConf{"pager__page": {ApproversOnly: true, Approval: "deny"}}}, true, ""},
	} {
		got := doctorApprovers(&tt.cfg)
		if tt.detail == "" {
			if len(got) != 0 {
				t.Errorf("%s: doctorApprovers = %+v, want no check", name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].ok != tt.ok || !strings.Contains(got[0].detail, tt.detail) || (!tt.ok && !strings.Contains(got[0].fix, "approval.approvers")) {
			t.Errorf("%s: doctorApprovers = %+v, want ok=%v with %q", name, got, tt.ok, tt.detail)
		}
	}
}
