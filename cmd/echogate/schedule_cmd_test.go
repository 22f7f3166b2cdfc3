package main

import (
	"context"
	"strings"
	"testing"
)

// `echogate schedule list|pause|resume` work on the store, with or without a running gateway;
// `run` needs the running gateway (its HTTP endpoint) and says so when none answers.
func TestScheduleCLI(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, `
schedules:
  - {name: digest, cron: "0 9 * * MON-FRI", timezone: Europe/Berlin, prompt: "Summarize #ops.", deliver: "slack:C1"}
`)
	vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_HTTP_ADDR": freeAddr(t)}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		e, out, errb := testEnv(vars, append([]string{"--config", path, "schedule"}, args...)...)
		code := run(context.Background(), e)
		return code, out.String(), errb.String()
	}
	code, out, errs := cli("list")
	if code != 0 || !containsAll(out, "digest", "cron 0 9 * * MON-FRI (Europe/Berlin)", "enabled", "next ") {
		t.Fatalf("schedule list = %d %q %q, want the config job with its next run", code, out, errs)
	}
	if code, out, errs := cli("pause", "digest"); code != 0 || !strings.Contains(out, "paused") {
		t.Errorf("schedule pause digest = %d %q %q, want paused", code, out, errs)
	}
	if _, out, _ := cli("list"); !strings.Contains(out, "paused") {
		t.Errorf("list after pause = %q, want it paused", out)
	}
	if code, out, errs := cli("resume", "config:digest"); code != 0 || !strings.Contains(out, "enabled") {
		t.Errorf("schedule resume = %d %q %q, want enabled", code, out, errs)
	}
	if code, _, errs := cli("pause", "nope"); code != 1 || !strings.Contains(errs, `no scheduled job "nope"`) {
		t.Errorf("schedule pause nope = %d %q, want exit 1 naming the job", code, errs)
	}
	if code, _, errs := cli("run", "digest"); code != 1 || !strings.Contains(errs, "needs the running gateway") {
		t.Errorf("schedule run without a gateway = %d %q, want exit 1 saying it needs the running gateway", code, errs)
	}
	if code, _, errs := cli("frobnicate"); code != 2 || !strings.Contains(errs, "frobnicate") {
		t.Errorf("schedule frobnicate = %d %q, want exit 2", code, errs)
	}
}

// doctor checks each job of schedules: its timing (the next run) and that its delivery
// platform is configured.
func TestDoctorChecksEachSchedule(t *testing.T) {
	cfg, err := loadConfig(writeConfig(t, `
schedules:
  - {name: digest, cron: "0 9 * * MON-FRI", timezone: Europe/Berlin, prompt: p, deliver: "web:ops"}
  - {name: dc, every: 1h, prompt: p, deliver: "discord:123"}
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]check{}
	for _, c := range doctorSchedules(cfg) {
		got[c.name] = c
	}
	if c := got["schedule:digest"]; !c.ok || !containsAll(c.detail, "cron 0 9 * * MON-FRI (Europe/Berlin)", "next run", "web:ops") {
		t.Errorf("doctor schedule:digest = %+v, want ok with its next run and target", c)
	}
	if c := got["schedule:dc"]; c.ok || !strings.Contains(c.detail, "Discord is not configured") || !strings.Contains(c.fix, "DISCORD_BOT_TOKEN") {
		t.Errorf("doctor schedule:dc = %+v, want a problem: Discord is not configured, fix naming DISCORD_BOT_TOKEN", c)
	}
}
