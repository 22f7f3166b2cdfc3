package web

import "errors"

// Sentinel errors of the web channel.
var (
	// ErrNotRunning is returned when an event would be submitted before Run started or after it
	// returned; HTTP clients see 503.
	ErrNotRunning = errors.New("web: channel is not running")
	// ErrAlreadyRunning is returned by a second call of Run.
	ErrAlreadyRunning = errors.New("web: Run called twice")
	// ErrTooManySessions is returned when Config.MaxSessions sessions are live and none of them can
	// be evicted (each has a client attached); HTTP clients see 503.
	ErrTooManySessions = errors.New("web: too many live sessions")
	// ErrWrongPlatform is returned by Send for an Outbound addressed to another platform.
	ErrWrongPlatform = errors.New("web: outbound message is not for the web platform")
	// ErrBadSession is returned for a session id that is empty, too long or holds characters
	// outside [A-Za-z0-9._-].
	ErrBadSession = errors.New("web: invalid session id")
)
