//go:build linux

package main

import (
	"fmt"
	"log/slog"
	"syscall"
)

// hardenProcess makes the gateway non-dumpable (prctl PR_SET_DUMPABLE 0). The kernel then owns
// the gateway's /proc/<pid> files as root and refuses /proc/<pid>/environ, mem, maps and ptrace
// to processes of the same user without CAP_SYS_PTRACE: run_command's children (and MCP servers)
// cannot read the tokens in the gateway's environment or memory. Children are dumpable again
// after exec, so this does not spread to them. A failure is logged, not fatal: the gateway still
// runs, with the weaker protection.
func hardenProcess(log *slog.Logger) {
	if err := setNotDumpable(); err != nil {
		log.Warn("could not make the process non-dumpable: run_command's children may read its environment", "err", err)
	}
}

func setNotDumpable() error {
	// syscall has what the call needs; no golang.org/x/sys dependency for one prctl.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	return nil
}
