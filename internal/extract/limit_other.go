//go:build !linux

package extract

import (
	"os"
	"runtime/debug"
	"time"
)

// selfExe is the running binary.
func selfExe() (string, error) { return os.Executable() }

// limitSelf bounds the Go heap's soft limit; the parent's timer bounds the time.
func limitSelf(mem int64, _ time.Duration) { debug.SetMemoryLimit(mem) }
