package slack

import "errors"

// Sentinel errors of the Slack channel. They are wrapped with the operation and ids; test with
// errors.Is.
var (
	// ErrConfig is wrapped by New when the configuration is invalid; the message names the field
	// and the fix.
	ErrConfig = errors.New("slack: invalid config")
	// ErrSlackAPI is wrapped when the Web API answered ok:false. The Slack error code follows in
	// the message ("slack: chat.postMessage to C1: api error: channel_not_found").
	ErrSlackAPI = errors.New("api error")
	// ErrUncertainDelivery is returned when chat.postMessage failed ambiguously (timeout,
	// connection reset, 5xx) and the gateway could not confirm whether the message was posted.
	// The message is not re-sent blindly, so the user may or may not have it.
	ErrUncertainDelivery = errors.New("delivery uncertain: the post may or may not have reached Slack")
	// ErrStreamDone is returned by Stream.Append and Stream.Finish after Finish.
	ErrStreamDone = errors.New("slack: stream already finished")
	// ErrUnknownEmoji is returned by React/Unreact for an emoji with no Slack name.
	ErrUnknownEmoji = errors.New("unknown emoji")
	// ErrInvalidSignature is the reason a request to the Events API endpoint was refused.
	ErrInvalidSignature = errors.New("invalid Slack request signature")
	// ErrNotRunning is returned when an event cannot be accepted because Run is not running or
	// its queue is full.
	ErrNotRunning = errors.New("slack: channel not running or busy")
)
