//go:build !linux

package extract

import (
	"runtime/debug"
	"time"
)

// limitSelf bounds the Go heap's soft limit; the parent's timer bounds the time.
func limitSelf(mem int64, _ time.Duration) { debug.SetMemoryLimit(mem) }
