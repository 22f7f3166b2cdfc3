package mcp

import "errors"

// Sentinel errors.
var (
	// ErrConfig wraps every configuration error returned by New.
	ErrConfig = errors.New("mcp: invalid configuration")
	// ErrRunning is returned by a second call of Manager.Run.
	ErrRunning = errors.New("mcp: manager already running")
	// ErrNotConnected is the cause recorded when a call reaches a server that has no session.
	ErrNotConnected = errors.New("mcp: server not connected")
)
