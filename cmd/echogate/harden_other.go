//go:build !linux

package main

import "log/slog"

// hardenProcess has nothing to do outside Linux: there is no /proc/<pid>/environ for a child to
// read (other systems' ps -E needs the same user; run such hosts' commands as another user).
func hardenProcess(log *slog.Logger) {
	log.Debug("process hardening is Linux only")
}
