package pipeline

import "errors"

var (
	// ErrMailboxFull is back-pressure: the session already has Config.MailboxSize events queued.
	// Adapters whose platform retries let it retry; others tell the user to wait.
	ErrMailboxFull = errors.New("pipeline: session mailbox is full; try again shortly")
	// ErrShuttingDown means the pipeline no longer accepts events.
	ErrShuttingDown = errors.New("pipeline: shutting down")
	// ErrNotRunning means Submit was called before Run.
	ErrNotRunning = errors.New("pipeline: not running (call Run first)")
	// ErrInvalidEvent means an adapter produced an event without the fields the pipeline needs.
	ErrInvalidEvent = errors.New("pipeline: invalid event")
)
