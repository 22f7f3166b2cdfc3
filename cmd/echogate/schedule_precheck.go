package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
)

// precheckTimeout bounds a precheck that sets no timeout of its own (tools.run_command.timeout,
// tools.http_fetch.timeout): the worker waits for it before the slot's turn is submitted.
const precheckTimeout = 30 * time.Second

// runPrecheck runs a job's precheck before the model is asked anything (SPEC "Scheduled work"):
// a command through run_command's own rules (no shell, only PATH, HOME, LANG and TMPDIR in its
// environment plus tools.run_command.env, the data dir's workspace as working directory, its
// arguments confined there, its process group killed at the timeout), allowed when it is in
// tools.run_command.allowed or is the absolute path the operator wrote in the precheck; or an
// HTTPS probe through http_fetch's SSRF guard and host lists. go reports whether the run goes
// ahead (exit 0, or a 2xx answer); why says what stopped it. An error means the precheck could
// not be run at all (a misconfiguration): the run fails with it.
func runPrecheck(ctx context.Context, cfg *Config, p PrecheckConf) (ok bool, why string, err error) {
	var tool tools.Tool
	var args any
	switch {
	case len(p.Command) > 0:
		rc := cfg.Tools["run_command"]
		allowed := slices.Clone(rc.Allowed)
		if filepath.IsAbs(p.Command[0]) {
			allowed = append(allowed, p.Command[0])
		}
		dir := filepath.Join(cfg.DataDir, "workspace")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return false, "", fmt.Errorf("precheck: create %s: %w", dir, err)
		}
		tool, err = builtin.NewRunCommand(builtin.RunCommandConfig{Allowed: allowed, Dir: dir, Timeout: timeoutOr(rc.Timeout),
			AllowPaths: rc.AllowPaths, PassEnv: rc.Env, MaxOutput: 2 << 10})
		args = map[string]any{"command": p.Command[0], "args": p.Command[1:]}
	case p.HTTP != "":
		fc := cfg.Tools["http_fetch"]
		tool, err = builtin.NewHTTPFetch(builtin.HTTPFetchConfig{AllowPrivate: fc.AllowPrivate, AllowHosts: fc.AllowHosts, DenyHosts: fc.DenyHosts,
			Timeout: timeoutOr(fc.Timeout)})
		args = map[string]any{"url": p.HTTP}
	default:
		return true, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("precheck: %w", err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return false, "", fmt.Errorf("precheck: %w", err)
	}
	res, err := tool.Call(ctx, raw)
	if err != nil {
		return false, "", fmt.Errorf("precheck: %w", err)
	}
	if res.IsError {
		return false, "precheck: " + precheckLine(res.Content), nil
	}
	return true, "", nil
}

func timeoutOr(d Duration) time.Duration {
	if d > 0 {
		return time.Duration(d)
	}
	return precheckTimeout
}

// precheckLine is the first line of a precheck's output, capped, for the run's record.
func precheckLine(s string) string {
	s = firstLine(strings.TrimSpace(s))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
