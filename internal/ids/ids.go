// Package ids makes identifiers: time-ordered, random, URL-safe.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// New returns a 26-character id whose first 10 hex characters are the Unix time in milliseconds
// (so ids sort by creation time) followed by 64 random bits. prefix is prepended as-is.
func New(prefix string) string {
	var b [13]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 4; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[5:]) // crypto/rand.Read never fails on supported platforms
	return prefix + hex.EncodeToString(b[:])
}
