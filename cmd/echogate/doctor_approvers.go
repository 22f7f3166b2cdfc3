package main

import (
	"slices"
	"strings"
)

// doctorApprovers names the tools whose calls need an approver's decision (run_command is
// destructive; tools.<name>.approvers_only) and says plainly when nobody may give one: the
// requester's own approval does not count, so every such call is refused.
func doctorApprovers(cfg *Config) []check {
	asks := func(t ToolConf) bool { return t.Approval != "allow" && t.Approval != "deny" }
	var needs []string
	if rc := cfg.Tools["run_command"]; len(rc.Allowed) > 0 && (rc.Enabled == nil || *rc.Enabled) && asks(rc) {
		needs = append(needs, "run_command")
	}
	for name, t := range cfg.Tools {
		if t.ApproversOnly && asks(t) && name != "run_command" {
			needs = append(needs, name)
		}
	}
	if len(needs) == 0 {
		return nil
	}
	slices.Sort(needs)
	tools := strings.Join(needs, ", ")
	if len(cfg.Approval.Approvers) > 0 {
		return []check{{name: "approvers", ok: true, detail: tools + ": an approver decides (" + strings.Join(cfg.Approval.Approvers, ", ") + ")"}}
	}
	return []check{{name: "approvers", detail: tools + " need an approver's decision and approval.approvers is empty: " +
		"every call is refused (agents with their own approvers excepted)",
		fix: "list who may approve under approval.approvers (or ECHOGATE_APPROVERS), e.g. slack:U0123ABC; " +
			"or set the tool's approval to deny to turn it off plainly"}}
}
