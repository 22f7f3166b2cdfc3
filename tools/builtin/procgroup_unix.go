//go:build unix

package builtin

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcessGroup runs cmd in its own process group and makes cancellation kill the whole group,
// so children the command started (a shell script's pipeline, git's helpers) die with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
}
