//go:build !unix

package builtin

import "os/exec"

// setProcessGroup is a no-op here: cancellation kills only the command itself
// (exec.CommandContext's default), not processes it started.
func setProcessGroup(*exec.Cmd) {}
