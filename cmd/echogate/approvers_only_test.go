package main

import "testing"

// tools.<name>.approvers_only is read: such a tool's calls need an approver (issue 36).
func TestToolApproversOnlyConfig(t *testing.T) {
	p := writeConfig(t, "tools:\n  current_time: {approval: ask, approvers_only: true}\n  http_fetch: {approval: allow}\n")
	cfg, err := loadConfig(p, func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-x"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Tools["current_time"].ApproversOnly || cfg.Tools["http_fetch"].ApproversOnly {
		t.Errorf("approvers_only read as current_time=%v http_fetch=%v, want true, false",
			cfg.Tools["current_time"].ApproversOnly, cfg.Tools["http_fetch"].ApproversOnly)
	}
}
