package discord

import "errors"

// Sentinel errors of the Discord channel. Returned errors wrap them with the operation and ids.
var (
	// ErrNoToken: the config has no bot token.
	ErrNoToken = errors.New("no bot token")
	// ErrNilSink: Run was called without a sink.
	ErrNilSink = errors.New("nil sink")
	// ErrAlreadyRunning: Run was called while another Run of the same channel is active.
	ErrAlreadyRunning = errors.New("already running")
	// ErrNoChannel: an outbound message or reference names no Discord channel.
	ErrNoChannel = errors.New("no channel id")
	// ErrEmptyMessage: an outbound message has no text.
	ErrEmptyMessage = errors.New("empty message")
	// ErrStreamFinished: Append or Finish was called on a finished stream.
	ErrStreamFinished = errors.New("stream already finished")
	// ErrUnauthorized: Discord rejected the bot token (HTTP 401 or gateway close 4004). Permanent.
	ErrUnauthorized = errors.New("bot token rejected")
	// ErrDisallowedIntents: the gateway refused the intents (close 4013/4014), usually because
	// the MESSAGE CONTENT privileged intent is not enabled in the Developer Portal. Permanent.
	ErrDisallowedIntents = errors.New("gateway intents not allowed")
	// ErrSharding: the gateway refused the shard settings (close 4010/4011). Permanent.
	ErrSharding = errors.New("invalid sharding")
	// ErrGatewayRejected: the gateway closed with another non-recoverable code. Permanent.
	ErrGatewayRejected = errors.New("gateway rejected the connection")
	// ErrOpenTimeout: a gateway connection attempt did not finish within Config.OpenTimeout.
	ErrOpenTimeout = errors.New("gateway connection attempt timed out")
	// ErrRateLimited: Discord kept answering 429 after Config.MaxRateLimitRetries retries.
	ErrRateLimited = errors.New("rate limited")
)
