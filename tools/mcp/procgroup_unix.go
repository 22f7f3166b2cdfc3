//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup runs a stdio server in its own process group: a Ctrl-C at the gateway's
// terminal does not hit it directly (the gateway closes it in order), and what it started can be
// cleaned up with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills what is left of the server's process group after the server exited.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil || cmd.Process.Pid <= 0 {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH: nothing left
}
