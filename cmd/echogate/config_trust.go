package main

import (
	"errors"
	"fmt"
	"os"
)

// A configuration file says who may use the gateway and what its agents may do, and serve
// reloads it when it changes. So it must be writable by its owner alone, and that owner must be
// this process's user or root: anyone else who can write it could hand themselves access
// without a restart.
//
// serve refuses to start with a file its group or other users may write, and warns about a file
// another user owns (a file bind-mounted into a container often keeps its owner on the host);
// a reload refuses both, naming the file, what is wrong and the fix, and keeps the running
// configuration.

// configFileTrust checks a configuration file of this mode, owned by uid, for a process
// running as self; nil means it may be read.
func configFileTrust(path string, mode os.FileMode, uid, self int) error {
	var what string
	switch perm := mode.Perm(); {
	case perm&0o020 != 0 && perm&0o002 != 0:
		what = "writable by its group and by other users"
	case perm&0o020 != 0:
		what = "writable by its group"
	case perm&0o002 != 0:
		what = "writable by other users"
	}
	if what != "" {
		return fmt.Errorf("%s is %s (mode %s): whoever can write it could change who may use the gateway and what its agents may do; "+
			"make it writable by its owner only: chmod 644 %s (or chmod 600)", path, what, mode.Perm(), path)
	}
	if uid != self && uid != 0 {
		return &foreignOwnerError{fmt.Errorf("%s is owned by uid %d, not by this process's user (uid %d) or root: its owner could change who may use the gateway "+
			"and what its agents may do; chown %d %s (or chown root)", path, uid, self, self, path)}
	}
	return nil
}

// foreignOwnerError is configFileTrust's error for a file another user owns: serve starts with a
// warning, a reload is refused.
type foreignOwnerError struct{ error }

func (e *foreignOwnerError) Unwrap() error { return e.error }

// checkConfigFile is configFileTrust for the file at path ("" passes).
func checkConfigFile(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("configuration file: %w", err)
	}
	uid, ok := fileOwner(fi)
	if !ok {
		uid = os.Getuid()
	}
	return configFileTrust(path, fi.Mode(), uid, os.Getuid())
}

// doctorConfigFile is doctor's view of checkConfigFile.
func doctorConfigFile(path string) check {
	c := check{name: "config:file"}
	if path == "" {
		c.skipped, c.detail = true, "no configuration file (environment only)"
		return c
	}
	err := checkConfigFile(path)
	var foreign *foreignOwnerError
	switch {
	case err == nil:
		c.ok, c.detail = true, path+" is writable by its owner only"
	case errors.As(err, &foreign):
		c.detail, c.fix = err.Error(), "serve starts with it, but refuses to reload it: chown it to the gateway's user or root"
	default:
		c.detail, c.fix = err.Error(), "serve refuses it: make it writable by its owner only (chmod 644 or 600)"
	}
	return c
}
