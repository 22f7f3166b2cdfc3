package schedule

import "errors"

// Sentinels, wrapped with details; test with errors.Is. A missing job or run wraps
// echogate.ErrNotFound, as every store's not-found does.
var (
	// ErrInvalid: a job's spec or fields are wrong; the message names the key and the fix.
	ErrInvalid = errors.New("invalid schedule")
	// ErrLimit: the owner has Limits.MaxPerUser jobs already.
	ErrLimit = errors.New("schedule limit reached")
)
